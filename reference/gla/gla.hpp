// ruleproof: gla (per-key gate), every form on [B, T, H, K] tensors.
// S_t = Diag(exp(g_t)) S_{t-1} + k_t v_t^T, o_t = S_t^T (scale q_t); g is [B, T, H, K].
#pragma once

#include "chunk.hpp"
#include "parallel.hpp"
#include "recurrent.hpp"
#include "rule.hpp"

namespace ruleproof::gla {

template <Scalar S> Output<S> recurrent(const Inputs<S> &in, const Options &opts) {
  return forward_heads(in, opts, signature,
                       [](const Head<S> &x, const S &scale) { return recurrent_head(x, scale); });
}

template <Scalar S> Output<S> parallel(const Inputs<S> &in, const Options &opts) {
  return forward_heads(in, opts, signature,
                       [](const Head<S> &x, const S &scale) { return parallel_head(x, scale); });
}

template <Scalar S> Output<S> chunk(const Inputs<S> &in, const Options &opts) {
  return forward_heads(in, opts, signature, [&](const Head<S> &x, const S &scale) {
    return chunk_head(x, scale, opts.chunk_size);
  });
}

template <Scalar S>
Grads<S> chunk_backward(const Inputs<S> &in, const Cotangents<S> &ct, const Options &opts) {
  return backward_heads(in, ct, opts, signature,
                        [&](const Head<S> &x, const HeadCotangent<S> &c, const S &scale) {
                          return chunk_backward_head(x, c, scale, opts.chunk_size);
                        });
}

} // namespace ruleproof::gla
