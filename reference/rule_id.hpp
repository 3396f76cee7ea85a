// ruleproof: the identity of every rule, and the forms. The one place a rule is named: the
// registry (rules.hpp: each entry's `id`, its name()), the kernel rules (gpu/kernel_rule.hpp:
// a subset of RuleId), the tests' rule lists (checks/lowrank_bounds.hpp, delta_support.hpp)
// and the names in every report all come from the table below. Light on purpose: no rule,
// no tensor, so that the GPU host code and the light check headers can include it.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

#include "core/gate_kind.hpp"

namespace ruleproof {

/// \brief One value per rule of the registry, in the order of rules::All (rules.hpp checks
/// the order at compile time).
enum class RuleId {
  linear_attn,
  linear_attn_normalised_identity,
  linear_attn_normalised_elu_plus_one,
  linear_attn_normalised_relu,
  simple_gla,
  gla,
  delta_rule,
  gated_delta_rule,
  kda,
  dplr,         ///< seed 001's parameterisation
  dplr_fla,     ///< flash-linear-attention's
  dplr_no_gate, ///< seed 001's "DPLR without explicit gating"
  iplr,
  gated_oja,
  softmax_attn,
};

/// \brief How the error of two forms of a rule computed in the same precision is bounded
/// (the derivations: property_tests/checks/properties.hpp and checks/delta_bounds.hpp).
enum class BoundFamily {
  /// Transitions with nonnegative entries (decay times the identity: the GLA family and
  /// linear attention): no term cancels on |inputs|, so the magnitude M of every element is
  /// the rule's own recurrent form run on |inputs|.
  nonnegative_transition,
  /// Contractions I - beta k k^T (times a decay) on normalised keys: ||S_t|| <= ||S_0|| +
  /// sum beta ||k|| ||v||, errors amplified by cond(I + A0) of the chunkwise solves.
  contraction,
  /// A low-rank term of either sign beside the decay (dplr, iplr: A_t - a_t d_t^T; gated_oja:
  /// A_t (I - beta_t v_t v_t^T)): errors against the MAJORANT, the rule's recurrence with every
  /// term made nonnegative, amplified by cond_inf of the chunk's triangular system
  /// (property_tests/checks/lowrank_bounds.hpp).
  low_rank,
  /// No state (softmax attention): the score's absolute error turned into the probabilities'
  /// relative error (property_tests/checks/softmax_bounds.hpp).
  softmax,
};

/// \brief What is known of a rule without its forms: its name (as DESIGN.md, the reports and
/// `--rule` write it), its gate, whether it takes beta or the low-rank pair a, b, and the
/// family its error bounds come from. The gate, beta and a, b agree with the rule's Signature
/// (a test of the property suite checks every rule).
struct RuleFacts {
  RuleId id;
  std::string_view name;
  GateKind gate;
  bool has_beta;
  bool has_ab;
  BoundFamily family;
};

/// Every rule, in registry order (checked below).
inline constexpr std::array<RuleFacts, 15> rule_table{{
    {RuleId::linear_attn, "linear_attn", GateKind::none, false, false,
     BoundFamily::nonnegative_transition},
    {RuleId::linear_attn_normalised_identity, "linear_attn_normalised_identity", GateKind::none,
     false, false, BoundFamily::nonnegative_transition},
    {RuleId::linear_attn_normalised_elu_plus_one, "linear_attn_normalised_elu+1", GateKind::none,
     false, false, BoundFamily::nonnegative_transition},
    {RuleId::linear_attn_normalised_relu, "linear_attn_normalised_relu", GateKind::none, false,
     false, BoundFamily::nonnegative_transition},
    {RuleId::simple_gla, "simple_gla", GateKind::scalar, false, false,
     BoundFamily::nonnegative_transition},
    {RuleId::gla, "gla", GateKind::key, false, false, BoundFamily::nonnegative_transition},
    {RuleId::delta_rule, "delta_rule", GateKind::none, true, false, BoundFamily::contraction},
    {RuleId::gated_delta_rule, "gated_delta_rule", GateKind::scalar, true, false,
     BoundFamily::contraction},
    {RuleId::kda, "kda", GateKind::key, true, false, BoundFamily::contraction},
    {RuleId::dplr, "dplr", GateKind::key, false, true, BoundFamily::low_rank},
    {RuleId::dplr_fla, "dplr_fla", GateKind::key, false, true, BoundFamily::low_rank},
    {RuleId::dplr_no_gate, "dplr_no_gate", GateKind::key, false, true, BoundFamily::low_rank},
    {RuleId::iplr, "iplr", GateKind::none, false, true, BoundFamily::low_rank},
    {RuleId::gated_oja, "gated_oja", GateKind::value, true, false, BoundFamily::low_rank},
    {RuleId::softmax_attn, "softmax_attn", GateKind::scalar, false, false, BoundFamily::softmax},
}};

namespace rule_id_detail {
constexpr bool table_in_enum_order() {
  for (std::size_t i = 0; i < rule_table.size(); ++i)
    if (static_cast<std::size_t>(rule_table[i].id) != i)
      return false;
  return true;
}
} // namespace rule_id_detail
static_assert(rule_id_detail::table_in_enum_order(),
              "rule_table must list every RuleId once, in the enum's order");

constexpr const RuleFacts &facts_of(RuleId r) { return rule_table[static_cast<std::size_t>(r)]; }

/// The rule's name, byte for byte what the reports and `--rule` use.
constexpr std::string_view name_of(RuleId r) { return facts_of(r).name; }
constexpr GateKind gate_of(RuleId r) { return facts_of(r).gate; }
/// Whether the rule takes beta [B, T, HV].
constexpr bool has_beta(RuleId r) { return facts_of(r).has_beta; }
/// Whether the rule takes the low-rank pair a, b [B, T, H, K] each.
constexpr bool has_ab(RuleId r) { return facts_of(r).has_ab; }
constexpr BoundFamily bound_family_of(RuleId r) { return facts_of(r).family; }
/// Whether the rule is a delta rule: transitions I - beta k k^T (times a decay).
constexpr bool is_delta(RuleId r) { return bound_family_of(r) == BoundFamily::contraction; }

/// \brief A rule's three forms, the same outputs computed three ways: the recurrent
/// definition, the parallel (quadratic) form and the chunkwise form.
enum class Form { recurrent, parallel, chunk };
inline constexpr std::array<Form, 3> all_forms{Form::recurrent, Form::parallel, Form::chunk};

constexpr std::string_view name_of(Form f) {
  switch (f) {
  case Form::recurrent: return "recurrent";
  case Form::parallel: return "parallel";
  case Form::chunk: return "chunk";
  }
  return "?";
}

} // namespace ruleproof
