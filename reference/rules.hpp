// ruleproof: the registry of rules. Each entry names a rule and gives its forms as static
// templates over the scalar, so the property suite and `ruleproof verify` can walk every
// rule x form x scalar with one piece of code.
#pragma once

#include <string>
#include <tuple>

#include "delta_rule/rule.hpp"
#include "dplr/rule.hpp"
#include "gated_delta_rule/rule.hpp"
#include "gated_oja/rule.hpp"
#include "gla/rule.hpp"
#include "iplr/rule.hpp"
#include "kda/rule.hpp"
#include "linear_attn/rule.hpp"
#include "simple_gla/rule.hpp"
#include "softmax_attn/rule.hpp"

#include "rule_id.hpp"

namespace ruleproof::rules {

/// \brief What the generators need to draw valid inputs for a rule.
struct InputDomain {
  bool positive_features = false; ///< q and k drawn so that phi(q)^T z stays away from 0
  /// k rows drawn with ||k||_2 <= 1, so that I - beta k k^T (beta in the signature's
  /// (beta_low, beta_high]) is a contraction and the delta rules' states stay bounded
  bool normalised_keys = false;
  /// v rows drawn with ||v||_2 <= 1, so that I - beta v v^T (gated_oja, beta in (0, 1]) is a
  /// contraction
  bool normalised_values = false;
  /// keeps no state (softmax attention): no initial state is drawn and no final state comes
  /// back, so nothing is carried from one call to the next
  bool stateless = false;
  /// the signature's gate may also be left out (softmax attention's gate bias): half the
  /// drawn cases have none
  bool optional_gate = false;
};

/// How the error of two forms of a rule is bounded: the registry's table (rule_id.hpp).
using ruleproof::BoundFamily;

/// A rule's BoundFamily, from the registry's table (rule_id.hpp).
template <class Rule> constexpr BoundFamily bound_family_of() {
  return ruleproof::bound_family_of(Rule::id);
}

/// gla: per-key gate.
struct Gla {
  static constexpr RuleId id = RuleId::gla;
  static std::string name() { return std::string(name_of(id)); }
  static Signature signature() { return gla::signature; }
  static InputDomain domain() { return {}; }
  template <class S> static Output<S> recurrent(const Inputs<S> &in, const Options &o) {
    return gla::recurrent(in, o);
  }
  template <class S> static Output<S> parallel(const Inputs<S> &in, const Options &o) {
    return gla::parallel(in, o);
  }
  template <class S> static Output<S> chunk(const Inputs<S> &in, const Options &o) {
    return gla::chunk(in, o);
  }
  template <class S>
  static Grads<S> chunk_backward(const Inputs<S> &in, const Cotangents<S> &ct, const Options &o) {
    return gla::chunk_backward(in, ct, o);
  }
};

/// simple_gla: scalar gate (RetNet with a constant gate, Mamba-2 style otherwise).
struct SimpleGla {
  static constexpr RuleId id = RuleId::simple_gla;
  static std::string name() { return std::string(name_of(id)); }
  static Signature signature() { return simple_gla::signature; }
  static InputDomain domain() { return {}; }
  template <class S> static Output<S> recurrent(const Inputs<S> &in, const Options &o) {
    return simple_gla::recurrent(in, o);
  }
  template <class S> static Output<S> parallel(const Inputs<S> &in, const Options &o) {
    return simple_gla::parallel(in, o);
  }
  template <class S> static Output<S> chunk(const Inputs<S> &in, const Options &o) {
    return simple_gla::chunk(in, o);
  }
  template <class S>
  static Grads<S> chunk_backward(const Inputs<S> &in, const Cotangents<S> &ct, const Options &o) {
    return simple_gla::chunk_backward(in, ct, o);
  }
};

/// linear_attn in one variant: plain or normalised, with a feature map.
template <bool Normalised, linear_attn::FeatureMap Map> struct LinearAttn {
  static constexpr linear_attn::Variant variant{Normalised, Map};
  static constexpr RuleId id =
      !Normalised                                    ? RuleId::linear_attn
      : Map == linear_attn::FeatureMap::identity     ? RuleId::linear_attn_normalised_identity
      : Map == linear_attn::FeatureMap::elu_plus_one ? RuleId::linear_attn_normalised_elu_plus_one
                                                     : RuleId::linear_attn_normalised_relu;
  static_assert(Normalised || Map == linear_attn::FeatureMap::identity,
                "the registry holds plain linear attention with the identity map alone");
  static std::string name() { return std::string(name_of(id)); }
  static Signature signature() { return linear_attn::signature_of(variant); }
  static InputDomain domain() { return {Normalised}; }
  template <class S> static Output<S> recurrent(const Inputs<S> &in, const Options &o) {
    return linear_attn::recurrent(in, o, variant);
  }
  template <class S> static Output<S> parallel(const Inputs<S> &in, const Options &o) {
    return linear_attn::parallel(in, o, variant);
  }
  template <class S> static Output<S> chunk(const Inputs<S> &in, const Options &o) {
    return linear_attn::chunk(in, o, variant);
  }
  template <class S>
  static Grads<S> chunk_backward(const Inputs<S> &in, const Cotangents<S> &ct, const Options &o) {
    return linear_attn::chunk_backward(in, ct, o, variant);
  }
};

/// delta_rule: no gate, beta in (0, 1] (Signature); keys normalised.
struct DeltaRule {
  static constexpr RuleId id = RuleId::delta_rule;
  static std::string name() { return std::string(name_of(id)); }
  static Signature signature() { return delta_rule::signature; }
  static InputDomain domain() { return {false, true}; }
  template <class S> static Output<S> recurrent(const Inputs<S> &in, const Options &o) {
    return delta_rule::recurrent(in, o);
  }
  template <class S> static Output<S> parallel(const Inputs<S> &in, const Options &o) {
    return delta_rule::parallel(in, o);
  }
  template <class S> static Output<S> chunk(const Inputs<S> &in, const Options &o) {
    return delta_rule::chunk(in, o);
  }
  template <class S>
  static Grads<S> chunk_backward(const Inputs<S> &in, const Cotangents<S> &ct, const Options &o) {
    return delta_rule::chunk_backward(in, ct, o);
  }
};

/// gated_delta_rule (Gated DeltaNet, seed 003): scalar gate, beta in (0, 1]; keys normalised.
struct GatedDeltaRule {
  static constexpr RuleId id = RuleId::gated_delta_rule;
  static std::string name() { return std::string(name_of(id)); }
  static Signature signature() { return gated_delta_rule::signature; }
  static InputDomain domain() { return {false, true}; }
  template <class S> static Output<S> recurrent(const Inputs<S> &in, const Options &o) {
    return gated_delta_rule::recurrent(in, o);
  }
  template <class S> static Output<S> parallel(const Inputs<S> &in, const Options &o) {
    return gated_delta_rule::parallel(in, o);
  }
  template <class S> static Output<S> chunk(const Inputs<S> &in, const Options &o) {
    return gated_delta_rule::chunk(in, o);
  }
  template <class S>
  static Grads<S> chunk_backward(const Inputs<S> &in, const Cotangents<S> &ct, const Options &o) {
    return gated_delta_rule::chunk_backward(in, ct, o);
  }
};

/// kda: per-key gate, beta in (0, 1]; keys normalised.
struct Kda {
  static constexpr RuleId id = RuleId::kda;
  static std::string name() { return std::string(name_of(id)); }
  static Signature signature() { return kda::signature; }
  static InputDomain domain() { return {false, true}; }
  template <class S> static Output<S> recurrent(const Inputs<S> &in, const Options &o) {
    return kda::recurrent(in, o);
  }
  template <class S> static Output<S> parallel(const Inputs<S> &in, const Options &o) {
    return kda::parallel(in, o);
  }
  template <class S> static Output<S> chunk(const Inputs<S> &in, const Options &o) {
    return kda::chunk(in, o);
  }
  template <class S>
  static Grads<S> chunk_backward(const Inputs<S> &in, const Cotangents<S> &ct, const Options &o) {
    return kda::chunk_backward(in, ct, o);
  }
};

/// dplr in one of its three parameterisations (reference/dplr/recurrent.hpp): per-key gate,
/// the low-rank pair a, b with rows of norm <= 1; named dplr (seed 001's), dplr_fla
/// (flash-linear-attention's) and dplr_no_gate (seed 001's "DPLR without explicit gating").
template <dplr::Parameterisation P> struct Dplr {
  static constexpr dplr::Parameterisation param = P;
  static constexpr RuleId id = P == dplr::Parameterisation::seed  ? RuleId::dplr
                               : P == dplr::Parameterisation::fla ? RuleId::dplr_fla
                                                                  : RuleId::dplr_no_gate;
  static std::string name() { return std::string(name_of(id)); }
  static Signature signature() { return dplr::signature; }
  static InputDomain domain() { return {}; }
  template <class S> static Output<S> recurrent(const Inputs<S> &in, const Options &o) {
    return dplr::recurrent(in, o, dplr::Variant{P});
  }
  template <class S> static Output<S> parallel(const Inputs<S> &in, const Options &o) {
    return dplr::parallel(in, o, dplr::Variant{P});
  }
  template <class S> static Output<S> chunk(const Inputs<S> &in, const Options &o) {
    return dplr::chunk(in, o, dplr::Variant{P});
  }
  template <class S>
  static Grads<S> chunk_backward(const Inputs<S> &in, const Cotangents<S> &ct, const Options &o) {
    return dplr::chunk_backward(in, ct, o, dplr::Variant{P});
  }
};

/// iplr: no gate, the low-rank pair a, b with rows of norm <= 1.
struct Iplr {
  static constexpr RuleId id = RuleId::iplr;
  static std::string name() { return std::string(name_of(id)); }
  static Signature signature() { return iplr::signature; }
  static InputDomain domain() { return {}; }
  template <class S> static Output<S> recurrent(const Inputs<S> &in, const Options &o) {
    return iplr::recurrent(in, o);
  }
  template <class S> static Output<S> parallel(const Inputs<S> &in, const Options &o) {
    return iplr::parallel(in, o);
  }
  template <class S> static Output<S> chunk(const Inputs<S> &in, const Options &o) {
    return iplr::chunk(in, o);
  }
  template <class S>
  static Grads<S> chunk_backward(const Inputs<S> &in, const Cotangents<S> &ct, const Options &o) {
    return iplr::chunk_backward(in, ct, o);
  }
};

/// gated_oja: per-value gate, beta in (0, 1]; values normalised.
struct GatedOja {
  static constexpr RuleId id = RuleId::gated_oja;
  static std::string name() { return std::string(name_of(id)); }
  static Signature signature() { return gated_oja::signature; }
  static InputDomain domain() {
    InputDomain d;
    d.normalised_values = true;
    return d;
  }
  template <class S> static Output<S> recurrent(const Inputs<S> &in, const Options &o) {
    return gated_oja::recurrent(in, o);
  }
  template <class S> static Output<S> parallel(const Inputs<S> &in, const Options &o) {
    return gated_oja::parallel(in, o);
  }
  template <class S> static Output<S> chunk(const Inputs<S> &in, const Options &o) {
    return gated_oja::chunk(in, o);
  }
  template <class S>
  static Grads<S> chunk_backward(const Inputs<S> &in, const Cotangents<S> &ct, const Options &o) {
    return gated_oja::chunk_backward(in, ct, o);
  }
};

/// softmax_attn: causal softmax attention with its optional scalar log-gate as a bias
/// G_i - G_j (softmax_attn::signature_of: a call may leave g out), no position encoding, no
/// state.
struct SoftmaxAttn {
  static constexpr RuleId id = RuleId::softmax_attn;
  static constexpr softmax_attn::Encoding encoding{};
  static std::string name() { return std::string(name_of(id)); }
  static Signature signature() { return {GateKind::scalar}; }
  static InputDomain domain() {
    InputDomain d;
    d.stateless = true;
    d.optional_gate = true;
    return d;
  }
  template <class S> static Output<S> recurrent(const Inputs<S> &in, const Options &o) {
    return softmax_attn::recurrent(in, o, encoding);
  }
  template <class S> static Output<S> parallel(const Inputs<S> &in, const Options &o) {
    return softmax_attn::parallel(in, o, encoding);
  }
  template <class S> static Output<S> chunk(const Inputs<S> &in, const Options &o) {
    return softmax_attn::chunk(in, o, encoding);
  }
  template <class S>
  static Grads<S> chunk_backward(const Inputs<S> &in, const Cotangents<S> &ct, const Options &o) {
    return softmax_attn::chunk_backward(in, ct, o, encoding);
  }
};

using FeatureMap = linear_attn::FeatureMap;

/// Every rule `ruleproof verify` and the property suite walk, in table order.
using All =
    std::tuple<LinearAttn<false, FeatureMap::identity>, LinearAttn<true, FeatureMap::identity>,
               LinearAttn<true, FeatureMap::elu_plus_one>, LinearAttn<true, FeatureMap::relu>,
               SimpleGla, Gla, DeltaRule, GatedDeltaRule, Kda, Dplr<dplr::Parameterisation::seed>,
               Dplr<dplr::Parameterisation::fla>, Dplr<dplr::Parameterisation::no_gate>, Iplr,
               GatedOja, SoftmaxAttn>;

namespace detail {
template <std::size_t... I> constexpr bool ids_in_table_order(std::index_sequence<I...>) {
  return ((std::tuple_element_t<I, All>::id == static_cast<RuleId>(I)) && ...);
}
} // namespace detail
static_assert(std::tuple_size_v<All> == rule_table.size() &&
                  detail::ids_in_table_order(std::make_index_sequence<std::tuple_size_v<All>>{}),
              "rules::All must hold one rule per RuleId, in the order of rule_table");

/// Calls fn(Rule{}) for every rule of All.
template <class Fn> void for_each_rule(Fn fn) {
  std::apply([&](auto... rule) { (fn(rule), ...); }, All{});
}

} // namespace ruleproof::rules
