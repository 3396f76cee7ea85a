// ruleproof: gated_delta_rule (Gated DeltaNet, scalar gate per head and step), every form on
// [B, T, H, K] tensors. S_t = (I - beta_t k_t k_t^T) exp(g_t) S_{t-1} + beta_t k_t v_t^T,
// o_t = S_t^T (scale q_t); g is [B, T, H], beta [B, T, H]. Seed 003 derives its chunkwise
// forward and backward; every form is kda's with the scalar gate repeated over the K keys
// (kda/chunk.hpp carries the seed's steps), and dg sums kda's over the keys.
// Its forms forward to the delta-rule family's driver, declared in kda/rule.hpp: a unit that
// includes this header alone calls the forms the truth library compiled (reference/truth/).
#pragma once

#include "../kda/rule.hpp"

namespace ruleproof::gated_delta_rule {

using kda::Variant;

inline const Signature signature = kda::signature_of(GateKind::scalar, {});

template <Scalar S>
Output<S> recurrent(const Inputs<S> &in, const Options &opts, const Variant &var = {}) {
  return kda::family::recurrent(in, opts, GateKind::scalar, var);
}

template <Scalar S>
Output<S> parallel(const Inputs<S> &in, const Options &opts, const Variant &var = {}) {
  return kda::family::parallel(in, opts, GateKind::scalar, var);
}

template <Scalar S>
Output<S> chunk(const Inputs<S> &in, const Options &opts, const Variant &var = {}) {
  return kda::family::chunk(in, opts, GateKind::scalar, var);
}

template <Scalar S>
Grads<S> chunk_backward(const Inputs<S> &in, const Cotangents<S> &ct, const Options &opts,
                        const Variant &var = {}) {
  return kda::family::chunk_backward(in, ct, opts, GateKind::scalar, var);
}

} // namespace ruleproof::gated_delta_rule
