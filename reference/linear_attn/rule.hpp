// ruleproof: linear_attn, plain and normalised, with a feature map: its variants, their
// signatures and the forms on [B, T, H, K] tensors.
// Declared here, defined in the rule's own headers: a unit that includes this one alone calls
// the forms the truth library compiled (reference/truth/), and depends on no form's code.
#pragma once

#include <string>

#include "../core/validate.hpp"

namespace ruleproof::linear_attn {

enum class FeatureMap { identity, elu_plus_one, relu };

inline std::string name_of(FeatureMap map) {
  switch (map) {
  case FeatureMap::identity: return "identity";
  case FeatureMap::elu_plus_one: return "elu+1";
  case FeatureMap::relu: return "relu";
  }
  return "?";
}

struct Variant {
  bool normalised = false;
  FeatureMap map = FeatureMap::identity;
};

inline Signature signature_of(const Variant &var) {
  return {GateKind::none, false, 0.0, 1.0, var.normalised ? 1u : 0u};
}

template <Scalar S>
Output<S> recurrent(const Inputs<S> &in, const Options &opts, const Variant &var = {});
template <Scalar S>
Output<S> parallel(const Inputs<S> &in, const Options &opts, const Variant &var = {});
template <Scalar S>
Output<S> chunk(const Inputs<S> &in, const Options &opts, const Variant &var = {});
template <Scalar S>
Grads<S> chunk_backward(const Inputs<S> &in, const Cotangents<S> &ct, const Options &opts,
                        const Variant &var = {});

} // namespace ruleproof::linear_attn
