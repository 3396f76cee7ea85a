// ruleproof: dplr (diagonal plus low rank, per-key gate), every form on [B, T, H, K] tensors,
// in the three parameterisations of recurrent.hpp; q, k, a, b [B, T, H, K], v [B, T, H, V],
// g [B, T, H, K] (natural log, g <= 0), no beta; o_t = S_t^T (scale q_t).
//
// Every form but the recurrent one runs the chunkwise engine of chunk.hpp, written for
// S_t = (A_t - a_t d_t^T) S_{t-1} + k_t v_t^T; `as_core` maps a parameterisation to it and
// `from_core` maps the gradients back:
//   seed:    d = exp(g) . b             db = exp(g) . dd,  dg += d . dd
//   fla:     a_core = b, d = -a         da = -dd,          db = da_core
//   no_gate: as it is.
#pragma once

#include "chunk.hpp"
#include "core.hpp"
#include "recurrent.hpp"
#include "rule.hpp"

namespace ruleproof::dplr {

/// \brief One head, parallel form: the whole sequence as one chunk of the chunkwise
/// engine (every decay pair taken in log space where the range requires it).
template <Scalar S> HeadOutput<S> parallel_head(const Head<S> &x, const S &scale) {
  return low_rank::whole_sequence_as_one_chunk(x, scale, chunk_head<S>);
}

template <Scalar S>
Output<S> recurrent(const Inputs<S> &in, const Options &opts, const Variant &var) {
  return forward_heads(in, opts, signature, [&](const Head<S> &x, const S &scale) {
    return recurrent_head(x, scale, var.param);
  });
}

template <Scalar S>
Output<S> parallel(const Inputs<S> &in, const Options &opts, const Variant &var) {
  return forward_heads(in, opts, signature, [&](const Head<S> &x, const S &scale) {
    return parallel_head(as_core(x, var.param), scale);
  });
}

template <Scalar S> Output<S> chunk(const Inputs<S> &in, const Options &opts, const Variant &var) {
  return forward_heads(in, opts, signature, [&](const Head<S> &x, const S &scale) {
    return chunk_head(as_core(x, var.param), scale, opts.chunk_size);
  });
}

/// The chunkwise analytic backward: dq, dk, dv, dg, da, db, dh0.
template <Scalar S>
Grads<S> chunk_backward(const Inputs<S> &in, const Cotangents<S> &ct, const Options &opts,
                        const Variant &var) {
  return backward_heads(
      in, ct, opts, signature, [&](const Head<S> &x, const HeadCotangent<S> &c, const S &scale) {
        return from_core(chunk_backward_head(as_core(x, var.param), c, scale, opts.chunk_size), x,
                         var.param);
      });
}

/// The stage intermediates of head h of sequence n, for checking a kernel stage by stage.
template <Scalar S>
ChunkStages<S> chunk_stages(const Inputs<S> &in, const Options &opts, std::size_t n, std::size_t h,
                            const Variant &var = {}) {
  validate(in, opts, signature);
  const auto seqs = sequences_of(in.q.dim(0), in.q.dim(1), opts);
  const Head<S> x = as_core(slice_head(in, seqs.at(n), h, signature), var.param);
  return chunk_forward_head(x, scale_of<S>(opts, in.q.dim(3)), opts.chunk_size).stages;
}

} // namespace ruleproof::dplr
