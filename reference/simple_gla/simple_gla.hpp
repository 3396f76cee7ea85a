// ruleproof: simple_gla (scalar gate per head and step; a constant gate is RetNet, a
// data-dependent one Mamba-2's). S_t = exp(g_t) S_{t-1} + k_t v_t^T, g is [B, T, H].
// Every form is gla's with the scalar gate repeated over the K keys; dg sums over keys.
#pragma once

#include "../gla/gla.hpp"
#include "rule.hpp"

namespace ruleproof::simple_gla {

/// The same head with its L x 1 gate repeated into gla's L x K key gate.
template <Scalar S> Head<S> as_key_gate(Head<S> x) {
  x.g = x.g.replicate(1, x.q.cols()).eval();
  return x;
}

template <Scalar S> Output<S> recurrent(const Inputs<S> &in, const Options &opts) {
  return forward_heads(in, opts, signature, [](const Head<S> &x, const S &scale) {
    return gla::recurrent_head(as_key_gate(x), scale);
  });
}

template <Scalar S> Output<S> parallel(const Inputs<S> &in, const Options &opts) {
  return forward_heads(in, opts, signature, [](const Head<S> &x, const S &scale) {
    return gla::parallel_head(as_key_gate(x), scale);
  });
}

template <Scalar S> Output<S> chunk(const Inputs<S> &in, const Options &opts) {
  return forward_heads(in, opts, signature, [&](const Head<S> &x, const S &scale) {
    return gla::chunk_head(as_key_gate(x), scale, opts.chunk_size);
  });
}

/// dg_t = sum over keys of gla's per-key dg_t (the chain rule through the repetition).
template <Scalar S>
Grads<S> chunk_backward(const Inputs<S> &in, const Cotangents<S> &ct, const Options &opts) {
  return backward_heads(
      in, ct, opts, signature, [&](const Head<S> &x, const HeadCotangent<S> &c, const S &scale) {
        HeadGrads<S> d = gla::chunk_backward_head(as_key_gate(x), c, scale, opts.chunk_size);
        d.dg = d.dg.rowwise().sum().eval();
        return d;
      });
}

} // namespace ruleproof::simple_gla
