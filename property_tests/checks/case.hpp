// ruleproof property checks: one drawn test case, the properties by name, and what a check
// reports. Light on purpose (no Eigen products, no RapidCheck): the Catch tests and
// `ruleproof verify` include it, the heavy templates live in properties.hpp and are compiled
// once per scalar in run_<scalar>.cpp.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "reference/core/compare.hpp"
#include "reference/core/validate.hpp"
#include "reference/rule_id.hpp"

namespace ruleproof::checks {

/// \brief The properties every rule must have. Names state the property.
enum class Property {
  forms_agree, ///< parallel and chunkwise (every C >= 1) equal the recurrent form
  varlen,      ///< cu_seqlens (B == 1, empty sequences allowed) equals each sequence alone, bitwise
  halves,      ///< two halves, the first's final state as the second's initial state
  causality,   ///< inputs at t >= P leave outputs at t < P bitwise unchanged
  gradients,   ///< chunk_backward == finite differences == dual numbers
  extreme_gates, ///< g in {-1e-8, -60, -3000} mixed: finite and equal to the recurrent form
  causality_extreme_gates, ///< causality with g in {-1e-8, -60, -3000} mixed
  gradients_extreme_gates, ///< gradients with g in {-2^-16, -60, -3000} mixed
};

inline const std::array<Property, 8> all_properties{Property::forms_agree,
                                                    Property::varlen,
                                                    Property::halves,
                                                    Property::causality,
                                                    Property::gradients,
                                                    Property::extreme_gates,
                                                    Property::causality_extreme_gates,
                                                    Property::gradients_extreme_gates};

inline std::string name_of(Property p) {
  switch (p) {
  case Property::forms_agree: return "chunkwise_and_parallel_equal_recurrent_any_chunk_size";
  case Property::varlen: return "varlen_equals_each_sequence_alone";
  case Property::halves: return "two_halves_with_carried_state_equal_one_run";
  case Property::causality: return "later_inputs_leave_earlier_outputs_bitwise_unchanged";
  case Property::gradients: return "chunk_backward_equals_finite_differences_equals_dual";
  case Property::extreme_gates: return "extreme_gates_give_finite_results_equal_to_recurrent";
  case Property::causality_extreme_gates:
    return "later_inputs_leave_earlier_outputs_bitwise_unchanged_extreme_gates";
  case Property::gradients_extreme_gates:
    return "chunk_backward_equals_finite_differences_equals_dual_extreme_gates";
  }
  return "?";
}

/// The scalar types a check runs in. all_scalars is the default sweep; mpfr (at the digits
/// set_check_mpfr_digits chose) runs when asked for.
enum class ScalarKind { double_, long_double, float128, mpfr };
inline const std::array<ScalarKind, 3> all_scalars{ScalarKind::double_, ScalarKind::long_double,
                                                   ScalarKind::float128};
inline std::string name_of(ScalarKind s) {
  switch (s) {
  case ScalarKind::double_: return "double";
  case ScalarKind::long_double: return "long_double";
  case ScalarKind::float128: return "float128";
  case ScalarKind::mpfr: return "mpfr";
  }
  return "?";
}

/// \brief What the generators need to know about a rule (from rules::All).
struct RuleInfo {
  RuleId id = RuleId::linear_attn; ///< the rule of rules::All (not read for sympow's rows)
  /// sympow's rows (power > 0), which are no rule of the registry, name themselves
  /// (sympow_infos: sympow_p<p>[_normalised]_<variant>); empty for every rule of rules::All
  std::string sympow_name;
  /// The rule's name: the registry's (name_of(id)), or a sympow row's own.
  std::string name() const { return power > 0 ? sympow_name : std::string(name_of(id)); }
  GateKind gate = GateKind::none;
  std::size_t extra_state_columns = 0;   ///< 1 for normalised linear attention (z beside S)
  bool positive_features = false;        ///< phi(q)^T z must stay away from zero
  bool features_may_be_negative = false; ///< phi >= 0 for every input (elu+1, relu)
  bool has_beta = false;                 ///< the delta rules
  double beta_low = 0, beta_high = 1;    ///< beta in (beta_low, beta_high]
  bool beta_high_open = false;           ///< beta in (beta_low, beta_high) instead
  bool normalised_keys = false;          ///< k rows with ||k||_2 <= 1
  bool normalised_values = false;        ///< v rows with ||v||_2 <= 1 (gated_oja)
  bool has_ab = false;                   ///< DPLR / IPLR low-rank pair a, b: rows ||.||_2 <= 1
  bool stateless = false;                ///< no state (softmax attention): no h0, no final state
  bool optional_gate = false;            ///< the gate may be left out: half the cases have none
  /// The delta rules' variants, drawn per case: q, k normalised inside the op, beta in (0, 2),
  /// grouped value heads (Case::qk_l2norm, neg_eigval, value_groups).
  bool delta_variants = false;
  /// Softmax attention's position encodings, drawn per case: ALiBi, rotary q, k and v, o
  /// (Case::alibi_slope, rope_qk, rope_vo).
  bool softmax_encodings = false;
  // sympow (symmetric power attention, seed 004) rows of `ruleproof verify`:
  int power = 0;          ///< p; 0 for every rule of rules::All
  bool normalise = false; ///< Y = S phi(Q') / (Z phi(Q')) (even p)
  bool rotary = false;    ///< rotating q and k: fixed rotary, or data-dependent rates (beta)
};

/// Whether property p says anything about rule r, and why not when it does not: a property
/// about gates on a rule without one, or about a carried state on a rule that keeps none.
/// Every other pair is checked, for the rules of rules::All and sympow's rows alike (sympow's
/// carried state in halves is its state H = [S^T | Z^T] with, when rotating, its angle mu).
inline std::string not_applicable(Property p, const RuleInfo &r) {
  const bool extreme = p == Property::extreme_gates || p == Property::causality_extreme_gates ||
                       p == Property::gradients_extreme_gates;
  if (extreme && r.gate == GateKind::none)
    return "no gate";
  if (p == Property::halves && r.stateless)
    return "no state: softmax attention keeps every key, so no state carries one half into the "
           "other";
  return "";
}
inline bool applies(Property p, const RuleInfo &r) { return not_applicable(p, r).empty(); }

/// \brief One drawn test case. Every value is a small dyadic rational (exact in every
/// scalar type), stored flat in the row-major layouts of DESIGN.md.
struct Case {
  std::size_t B = 1, T = 0, H = 1, K = 1, V = 1; ///< q, k: [B, T, H, K]; v: [B, T, H, V]
  std::size_t C = 1;                             ///< chunk size, C >= 1
  std::size_t state_columns = 1;                 ///< V, or V + 1 when z sits beside S
  GateKind gate = GateKind::none;
  std::vector<std::int64_t> cu_seqlens; ///< varlen cases only (then B == 1)
  std::size_t split = 0;                ///< P: halves and causality
  bool has_h0 = false;
  std::vector<double> q, k, v, g, h0; ///< h0: [N, H, K, state_columns] when has_h0
  bool has_beta = false;              ///< the rule takes beta (the delta rules, sympow's rates)
  std::vector<double> beta;           ///< [B, T, H] when has_beta
  bool has_ab = false;                ///< the rule takes the low-rank pair (dplr, iplr)
  std::vector<double> a, b;           ///< [B, T, H, K] each when has_ab
  std::vector<double> d_o, d_ht;      ///< cotangents (gradient cases); d_ht may be empty
  std::vector<double> q_late, k_late, v_late, g_late; ///< causality: values for t >= P
  std::vector<double> beta_late;                      ///< causality, the delta rules
  std::vector<double> a_late, b_late;                 ///< causality, dplr and iplr
  int power = 0;                                      ///< sympow: p (0: a rule of rules::All)
  bool normalise = false;                             ///< sympow: normalised
  double rotary_base = 0; ///< sympow: N of the rotary rates (0: no rotation)
  // The rule's variant (RuleInfo::delta_variants, softmax_encodings); the defaults are the
  // registry's rule itself.
  std::size_t value_groups = 1; ///< delta rules: H * value_groups value heads (v, g, beta, h0)
  bool qk_l2norm = false;       ///< delta rules: q, k -> x / sqrt(||x||^2 + eps) inside the op
  bool neg_eigval = false;      ///< delta rules: beta in (0, 2), I - beta k k^T nears -1
  double alibi_slope = 0;       ///< softmax_attn: the bias -m (i - j)
  bool rope_qk = false;         ///< softmax_attn: q, k rotated (base rope_base)
  bool rope_vo = false;         ///< softmax_attn: v rotated, o rotated back (base rope_base)
  static constexpr double rope_base = 100;

  std::size_t sequences() const { return cu_seqlens.empty() ? B : cu_seqlens.size() - 1; }
  /// Heads of v, the gate, beta and the state: H, or H * value_groups with grouped value heads.
  std::size_t value_heads() const { return H * value_groups; }
  bool has_delta_variant() const { return qk_l2norm || neg_eigval; }
  bool has_encoding() const { return alibi_slope != 0 || rope_qk || rope_vo; }
};

/// The case with the values drawn for t >= P (q_late, k_late, v_late, g_late, beta_late,
/// a_late, b_late) in place of its own: the causality property takes its steps t >= P from it.
inline Case late_case(const Case &c) {
  Case late = c;
  late.q = c.q_late, late.k = c.k_late, late.v = c.v_late, late.g = c.g_late;
  late.beta = c.beta_late;
  late.a = c.a_late, late.b = c.b_late;
  return late;
}

/// " cu_seqlens=[0,3,3,7]", or nothing without offsets: how every case description shows them.
inline std::string describe_offsets(const std::vector<std::int64_t> &cu_seqlens) {
  if (cu_seqlens.empty())
    return "";
  std::ostringstream os;
  os << " cu_seqlens=[";
  for (std::size_t i = 0; i < cu_seqlens.size(); ++i)
    os << (i ? "," : "") << cu_seqlens[i];
  os << "]";
  return os.str();
}

namespace detail {
inline void show_values(std::ostream &os, const char *name, const std::vector<double> &x) {
  if (x.empty())
    return;
  os << "\n  " << name << " = [";
  for (std::size_t i = 0; i < x.size(); ++i)
    os << (i ? ", " : "") << x[i];
  os << "]";
}
} // namespace detail

/// A readable, complete description of a case (enough to rebuild it by hand).
inline std::string describe(const Case &c) {
  std::ostringstream os;
  os.precision(17);
  os << "B=" << c.B << " T=" << c.T << " H=" << c.H << " K=" << c.K << " V=" << c.V << " C=" << c.C
     << " P=" << c.split << " initial_state=" << (c.has_h0 ? "yes" : "no");
  if (c.power > 0)
    os << " p=" << c.power << " normalised=" << (c.normalise ? "yes" : "no")
       << " rotary_base=" << c.rotary_base;
  if (c.value_groups > 1)
    os << " value_heads=" << c.value_heads();
  if (c.qk_l2norm)
    os << " qk_l2norm=yes";
  if (c.neg_eigval)
    os << " beta_up_to_2=yes";
  if (c.alibi_slope != 0)
    os << " alibi_slope=" << c.alibi_slope;
  if (c.rope_qk || c.rope_vo)
    os << " rope_qk=" << (c.rope_qk ? "yes" : "no") << " rope_vo=" << (c.rope_vo ? "yes" : "no")
       << " rope_base=" << Case::rope_base;
  os << describe_offsets(c.cu_seqlens);
  detail::show_values(os, "q", c.q);
  detail::show_values(os, "k", c.k);
  detail::show_values(os, "v", c.v);
  detail::show_values(os, "g", c.g);
  detail::show_values(os, "beta", c.beta);
  detail::show_values(os, "a", c.a);
  detail::show_values(os, "b", c.b);
  detail::show_values(os, "h0", c.h0);
  detail::show_values(os, "do", c.d_o);
  detail::show_values(os, "dht", c.d_ht);
  detail::show_values(os, "q(t>=P)", c.q_late);
  detail::show_values(os, "k(t>=P)", c.k_late);
  detail::show_values(os, "v(t>=P)", c.v_late);
  detail::show_values(os, "g(t>=P)", c.g_late);
  detail::show_values(os, "beta(t>=P)", c.beta_late);
  detail::show_values(os, "a(t>=P)", c.a_late);
  detail::show_values(os, "b(t>=P)", c.b_late);
  return os.str();
}

/// RapidCheck prints counterexamples through this (found by argument-dependent lookup).
inline void showValue(const Case &c, std::ostream &os) { os << describe(c); }

/// \brief One comparison of a check: a form's result against its reference, the worst
/// element over every tensor compared, and the bound that element had.
struct Measure {
  Measure() = default;
  Measure(std::string form_, std::string against_)
      : form(std::move(form_)), against(std::move(against_)) {}
  std::string form;               ///< recurrent, parallel, chunk, chunk_backward, finite_difference
  std::string against;            ///< what it was compared with
  std::size_t elements = 0;       ///< elements compared
  std::size_t undecided = 0;      ///< elements the precision cannot decide (bound infinite)
  double worst_ratio = 0;         ///< max |a - b| / bound (bitwise checks: 0 or infinity)
  double worst_rel = 0;           ///< max over tensors of max|a - b| / max|b|
  bool finite = true;             ///< false when a NaN or infinity showed up
  std::string where;              ///< the worst element: tensor, index, both values and the bound
  std::string tensor;             ///< the tensor of the worst element (or the first not finite)
  std::vector<std::size_t> index; ///< that element's index in the tensor's shape
  double worst_error = 0;         ///< |a - b| at that element
  double worst_bound = 0;         ///< the bound at that element: the error allowed there
  bool holds() const { return finite && worst_ratio <= 1.0; }
  /// Records the worst element: `flat` is its row-major offset in a tensor of `shape`.
  /// `error`: |a - b| there, taken in the compared scalar (in double, two values of a higher
  /// precision may round to one and show no difference).
  void set_worst(const std::string &what, const std::vector<std::size_t> &shape, std::size_t flat,
                 double error, double bound) {
    tensor = what;
    index.assign(shape.size(), 0);
    for (std::size_t d = shape.size(); d-- > 0 && shape[d] > 0; flat /= shape[d])
      index[d] = flat % shape[d];
    worst_error = error;
    worst_bound = bound;
  }
  double digits() const { return digits_agreed(worst_rel); }
};

/// \brief The result of one check on one case: a Measure per form compared.
struct Report {
  bool applicable = true; ///< false when the property says nothing about this rule
  std::vector<Measure> measures;
  bool holds() const {
    for (const auto &m : measures)
      if (!m.holds())
        return false;
    return true;
  }
  std::string summary() const {
    std::ostringstream os;
    for (const auto &m : measures)
      os << m.form << " vs " << m.against << ": " << (m.holds() ? "holds" : "FAILS")
         << ", error/bound " << m.worst_ratio << ", rel " << m.worst_rel
         << (m.undecided ? ", " + std::to_string(m.undecided) + " undecided" : "")
         << (m.where.empty() ? "" : ", worst " + m.where) << "\n";
    return os.str();
  }
};

} // namespace ruleproof::checks
