// ruleproof: iplr (identity plus low rank): S_t = S_{t-1} + b_t (a_t^T S_{t-1}) + k_t v_t^T,
// o_t = S_t^T (scale q_t); q, k, a, b [B, T, H, K], v [B, T, H, V], no gate, no beta. It is
// dplr in flash-linear-attention's parameterisation with g = 0: the recurrent form here is
// its own loop, every other form runs dplr's chunkwise engine with a = b_iplr, d = -a_iplr
// and no decay.
#pragma once

#include "../dplr/dplr.hpp"
#include "recurrent.hpp"
#include "rule.hpp"

namespace ruleproof::iplr {

template <Scalar S> Output<S> recurrent(const Inputs<S> &in, const Options &opts) {
  return forward_heads(in, opts, signature,
                       [](const Head<S> &x, const S &scale) { return recurrent_head(x, scale); });
}

template <Scalar S> Output<S> parallel(const Inputs<S> &in, const Options &opts) {
  return forward_heads(in, opts, signature, [](const Head<S> &x, const S &scale) {
    return dplr::parallel_head(as_core(x), scale);
  });
}

template <Scalar S> Output<S> chunk(const Inputs<S> &in, const Options &opts) {
  return forward_heads(in, opts, signature, [&](const Head<S> &x, const S &scale) {
    return dplr::chunk_head(as_core(x), scale, opts.chunk_size);
  });
}

/// The chunkwise analytic backward: dq, dk, dv, da, db, dh0.
template <Scalar S>
Grads<S> chunk_backward(const Inputs<S> &in, const Cotangents<S> &ct, const Options &opts) {
  return backward_heads(
      in, ct, opts, signature, [&](const Head<S> &x, const HeadCotangent<S> &c, const S &scale) {
        return from_core(dplr::chunk_backward_head(as_core(x), c, scale, opts.chunk_size), x);
      });
}

} // namespace ruleproof::iplr
