// ruleproof: the registry of rules. Each entry names a rule and gives its forms as static
// templates over the scalar, so the property suite and `ruleproof verify` can walk every
// rule x form x scalar with one piece of code.
#pragma once

#include <string>
#include <tuple>

#include "delta_rule/delta_rule.hpp"
#include "gated_delta_rule/gated_delta_rule.hpp"
#include "gla/gla.hpp"
#include "kda/kda.hpp"
#include "linear_attn/linear_attn.hpp"
#include "simple_gla/simple_gla.hpp"

namespace ruleproof::rules {

/// \brief What the generators need to draw valid inputs for a rule.
struct InputDomain {
  bool positive_features = false; ///< q and k drawn so that phi(q)^T z stays away from 0
  /// k rows drawn with ||k||_2 <= 1, so that I - beta k k^T (beta in the signature's
  /// (beta_low, beta_high]) is a contraction and the delta rules' states stay bounded
  bool normalised_keys = false;
};

/// \brief How the error of two forms of a rule computed in the same precision is bounded
/// (the derivations: property_tests/checks/properties.hpp and checks/delta_bounds.hpp).
enum class BoundFamily {
  /// Transitions with nonnegative entries (decay times the identity: the GLA family and
  /// linear attention): no term cancels on |inputs|, so the magnitude M of every element is
  /// the rule's own recurrent form run on |inputs|. The default for a rule that names none.
  nonnegative_transition,
  /// Contractions I - beta k k^T (times a decay) on normalised keys: ||S_t|| <= ||S_0|| +
  /// sum beta ||k|| ||v||, errors amplified by cond(I + A0) of the chunkwise solves.
  contraction,
};

/// A rule's BoundFamily: its static member `bound_family`, else nonnegative_transition.
template <class Rule> constexpr BoundFamily bound_family_of() {
  if constexpr (requires { Rule::bound_family; })
    return Rule::bound_family;
  else
    return BoundFamily::nonnegative_transition;
}

/// gla: per-key gate.
struct Gla {
  static std::string name() { return "gla"; }
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
  static std::string name() { return "simple_gla"; }
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
  static std::string name() {
    return Normalised ? "linear_attn_normalised_" + linear_attn::name_of(Map)
                      : std::string("linear_attn");
  }
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
  static constexpr BoundFamily bound_family = BoundFamily::contraction;
  static std::string name() { return "delta_rule"; }
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
  static constexpr BoundFamily bound_family = BoundFamily::contraction;
  static std::string name() { return "gated_delta_rule"; }
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
  static constexpr BoundFamily bound_family = BoundFamily::contraction;
  static std::string name() { return "kda"; }
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

using FeatureMap = linear_attn::FeatureMap;

/// Every rule `ruleproof verify` and the property suite walk, in table order.
using All =
    std::tuple<LinearAttn<false, FeatureMap::identity>, LinearAttn<true, FeatureMap::identity>,
               LinearAttn<true, FeatureMap::elu_plus_one>, LinearAttn<true, FeatureMap::relu>,
               SimpleGla, Gla, DeltaRule, GatedDeltaRule, Kda>;

/// Calls fn(Rule{}) for every rule of All.
template <class Fn> void for_each_rule(Fn fn) {
  std::apply([&](auto... rule) { (fn(rule), ...); }, All{});
}

} // namespace ruleproof::rules
