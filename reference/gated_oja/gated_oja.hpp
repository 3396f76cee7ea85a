// ruleproof: gated_oja (the gated Oja rule, per-value gate), every form on [B, T, H, K]
// tensors: S_t = S_{t-1} A_t (I - beta_t v_t v_t^T) + beta_t k_t v_t^T, o_t = S_t^T (scale q_t);
// q, k [B, T, H, K], v [B, T, H, V], g [B, T, H, V] (natural log, g <= 0), beta [B, T, H].
#pragma once

#include "chunk.hpp"
#include "recurrent.hpp"
#include "rule.hpp"

namespace ruleproof::gated_oja {

/// \brief One head, parallel form: the whole sequence as one chunk (every decay pair taken
/// in log space where the range requires it).
template <Scalar S> HeadOutput<S> parallel_head(const Head<S> &x, const S &scale) {
  return low_rank::whole_sequence_as_one_chunk(x, scale, chunk_head<S>);
}

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

/// The chunkwise analytic backward: dq, dk, dv, dg, dbeta, dh0.
template <Scalar S>
Grads<S> chunk_backward(const Inputs<S> &in, const Cotangents<S> &ct, const Options &opts) {
  return backward_heads(in, ct, opts, signature,
                        [&](const Head<S> &x, const HeadCotangent<S> &c, const S &scale) {
                          return chunk_backward_head(x, c, scale, opts.chunk_size);
                        });
}

/// The stage intermediates of head h of sequence n, for checking a kernel stage by stage.
template <Scalar S>
ChunkStages<S> chunk_stages(const Inputs<S> &in, const Options &opts, std::size_t n,
                            std::size_t h) {
  validate(in, opts, signature);
  const auto seqs = sequences_of(in.q.dim(0), in.q.dim(1), opts);
  const Head<S> x = slice_head(in, seqs.at(n), h, signature);
  return chunk_forward_head(x, scale_of<S>(opts, in.q.dim(3)), opts.chunk_size).stages;
}

} // namespace ruleproof::gated_oja
