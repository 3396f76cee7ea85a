// ruleproof: delta_rule (DeltaNet, no gate), every form on [B, T, H, K] tensors.
// S_t = (I - beta_t k_t k_t^T) S_{t-1} + beta_t k_t v_t^T, o_t = S_t^T (scale q_t);
// beta [B, T, H]. Every form is kda's with g = 0 (the decay factors are all 1).
// Its forms forward to the delta-rule family's driver, declared in kda/rule.hpp: a unit that
// includes this header alone calls the forms the truth library compiled (reference/truth/).
#pragma once

#include "../kda/rule.hpp"

namespace ruleproof::delta_rule {

using kda::Variant;

inline const Signature signature = kda::signature_of(GateKind::none, {});

template <Scalar S>
Output<S> recurrent(const Inputs<S> &in, const Options &opts, const Variant &var = {}) {
  return kda::family::recurrent(in, opts, GateKind::none, var);
}

template <Scalar S>
Output<S> parallel(const Inputs<S> &in, const Options &opts, const Variant &var = {}) {
  return kda::family::parallel(in, opts, GateKind::none, var);
}

template <Scalar S>
Output<S> chunk(const Inputs<S> &in, const Options &opts, const Variant &var = {}) {
  return kda::family::chunk(in, opts, GateKind::none, var);
}

template <Scalar S>
Grads<S> chunk_backward(const Inputs<S> &in, const Cotangents<S> &ct, const Options &opts,
                        const Variant &var = {}) {
  return kda::family::chunk_backward(in, ct, opts, GateKind::none, var);
}

} // namespace ruleproof::delta_rule
