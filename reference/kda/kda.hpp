// ruleproof: kda (Kimi Delta Attention, per-key gate), every form on [B, T, H, K] tensors,
// and the driver the whole delta-rule family shares.
// S_t = (I - beta_t k_t k_t^T) Diag(exp(g_t)) S_{t-1} + beta_t k_t v_t^T,
// o_t = S_t^T (scale q_t); g is [B, T, H, K], beta [B, T, H].
#pragma once

#include "chunk.hpp"
#include "parallel.hpp"
#include "recurrent.hpp"
#include "rule.hpp"
#include "variant.hpp"

namespace ruleproof::kda {

/// The driver of delta_rule (no gate), gated_delta_rule (scalar gate) and kda (key gate):
/// grouped value heads expanded, every head turned into KDA's, run, and back.
namespace family {

/// Runs `form(kda_head, scale)` on every head of every sequence.
template <Scalar S, class Form>
Output<S> forward(const Inputs<S> &in, const Options &opts, GateKind gate, const Variant &var,
                  Form form) {
  const std::size_t G = value_groups(in);
  return forward_heads(
      with_value_heads(in, G), opts, signature_of(gate, var),
      [&](const Head<S> &x, const S &scale) { return form(as_kda(x, gate, var), scale); });
}

template <Scalar S>
Output<S> recurrent(const Inputs<S> &in, const Options &opts, GateKind gate, const Variant &var) {
  return forward(in, opts, gate, var,
                 [](const Head<S> &x, const S &scale) { return recurrent_head(x, scale); });
}

template <Scalar S>
Output<S> parallel(const Inputs<S> &in, const Options &opts, GateKind gate, const Variant &var) {
  return forward(in, opts, gate, var,
                 [](const Head<S> &x, const S &scale) { return parallel_head(x, scale); });
}

template <Scalar S>
Output<S> chunk(const Inputs<S> &in, const Options &opts, GateKind gate, const Variant &var) {
  return forward(in, opts, gate, var, [&](const Head<S> &x, const S &scale) {
    return chunk_head(x, scale, opts.chunk_size, gate);
  });
}

/// The chunkwise analytic backward; dq and dk summed over each group of value heads.
template <Scalar S>
Grads<S> chunk_backward(const Inputs<S> &in, const Cotangents<S> &ct, const Options &opts,
                        GateKind gate, const Variant &var) {
  const std::size_t G = value_groups(in);
  Grads<S> d = backward_heads(
      with_value_heads(in, G), ct, opts, signature_of(gate, var),
      [&](const Head<S> &x, const HeadCotangent<S> &c, const S &scale) {
        return from_kda(chunk_backward_head(as_kda(x, gate, var), c, scale, opts.chunk_size, gate),
                        x, gate, var);
      });
  if (G > 1) {
    d.dq = sum_head_groups(d.dq, G);
    d.dk = sum_head_groups(d.dk, G);
  }
  return d;
}

} // namespace family

} // namespace ruleproof::kda
