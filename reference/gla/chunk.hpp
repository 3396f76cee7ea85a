// ruleproof: GLA, chunkwise form and its analytic backward, with the stages named as the
// kernels name them (chunk_local_cumsum, A, h). Seed 002's log-space scores inside a
// chunk, the state passed from chunk to chunk.
#pragma once

#include <deque>
#include <vector>

#include "../core/heads.hpp"
#include "../shared/chunk.hpp"

namespace ruleproof::gla {

using shared::chunk_local_cumsum;

/// \brief The stage intermediates of the chunkwise forward, one entry per chunk.
template <class S> struct ChunkStages {
  Mat<S> g_cum;          ///< L x K, chunk_local_cumsum of g
  std::vector<Mat<S>> h; ///< K x V state at each chunk start (h[0] = initial state)
  std::vector<Mat<S>> A; ///< n x n intra-chunk scores of scaled q and k, lower triangular
};

template <class S> struct ChunkForward {
  HeadOutput<S> out;
  ChunkStages<S> stages;
};

namespace detail {
using namespace shared;

/// The forward pass with what the backward needs again: each chunk's g_cum and decay
/// (its exp values computed once).
template <class S> struct ChunkPass {
  ChunkForward<S> fwd;
  std::deque<Mat<S>> g_cum;         ///< per chunk; stable addresses, the decays refer to them
  std::vector<ChunkDecay<S>> decay; ///< per chunk
};

/// Runs the chunks in order: scores A, the output (when asked), the state passed on.
template <Scalar S>
void chunk_forward_pass(const Head<S> &x, const S &scale, std::size_t C, bool with_output,
                        ChunkPass<S> &p) {
  const Eigen::Index L = x.q.rows();
  ChunkForward<S> &r = p.fwd;
  r.stages.g_cum = chunk_local_cumsum(x.g, C);
  r.out.o = Mat<S>::Zero(L, x.v.cols());
  Mat<S> h = x.h0;
  const auto chunks = chunks_of(L, C);
  p.decay.reserve(chunks.size());
  for (const auto &[s, n] : chunks) {
    const Mat<S> q = scale * x.q.middleRows(s, n), k = x.k.middleRows(s, n);
    const Mat<S> v = x.v.middleRows(s, n);
    const Mat<S> &g_cum = p.g_cum.emplace_back(r.stages.g_cum.middleRows(s, n));
    const ChunkDecay<S> &decay = p.decay.emplace_back(g_cum);
    Mat<S> A = decay.scores(q, k);
    const Mat<S> &b = decay.up(); // e^{g_cum}
    if (with_output)              // O = (Q~ . e^{g_cum}) h + A V, A lower triangular
      r.out.o.middleRows(s, n) = product<S>(Mat<S>(q.cwiseProduct(b)), false, h, false) +
                                 product<S>(A, false, v, false, Structure::left_lower);
    r.stages.h.push_back(emulation::stored<S>(h)); // kernels store h in 16 bits
    r.stages.A.push_back(std::move(A));
    const Vec<S> b_last = b.row(n - 1).transpose();
    h = b_last.asDiagonal() * h +
        product<S>(Mat<S>(k.cwiseProduct(chunk_decay_to_end(decay, g_cum))), true, v, false);
  }
  r.out.ht = h;
}

} // namespace detail

/// \brief One head, chunkwise: for each chunk with start state h,
/// \f$ O = (\tilde Q \odot e^{g^{cum}}) h + A V \f$ and
/// \f$ h' = \mathrm{Diag}(e^{g^{cum}_{last}}) h + (K \odot e^{g^{cum}_{last} - g^{cum}})^\top V
/// \f$.
template <Scalar S>
ChunkForward<S> chunk_forward_head(const Head<S> &x, const S &scale, std::size_t C) {
  detail::ChunkPass<S> p;
  detail::chunk_forward_pass(x, scale, C, true, p);
  return std::move(p.fwd);
}

template <Scalar S> HeadOutput<S> chunk_head(const Head<S> &x, const S &scale, std::size_t C) {
  return chunk_forward_head(x, scale, C).out;
}

/// \brief `chunk_bwd_dh`: the gradient of the state at each chunk's end, dh[c], walking the
/// chunks backwards from \f$ dS_T \f$: \f$ dh = \mathrm{Diag}(e^{g^{cum}_{last}}) dh' +
/// (\tilde Q \odot e^{g^{cum}})^\top dO \f$; what is left is the initial state's, dh0.
template <class S> struct StateGrads {
  std::vector<Mat<S>> dh; ///< K x V per chunk: the gradient of the state after the chunk
  Mat<S> dh0;
};
template <Scalar S>
StateGrads<S> chunk_bwd_dh(const Head<S> &x, const HeadCotangent<S> &ct, const S &scale,
                           const detail::ChunkPass<S> &p,
                           const std::vector<shared::ChunkRange> &chunks) {
  using shared::product;
  StateGrads<S> r;
  r.dh.resize(chunks.size());
  Mat<S> dh = ct.d_ht; // gradient of the state after the last chunk
  for (std::size_t c = chunks.size(); c-- > 0;) {
    const auto [s, n] = chunks[c];
    r.dh[c] = dh;
    const Mat<S> q = scale * x.q.middleRows(s, n), d_o = ct.d_o.middleRows(s, n);
    const Mat<S> &b = p.decay[c].up(); // e^{g_cum}
    const Vec<S> b_last = b.row(n - 1).transpose();
    dh = b_last.asDiagonal() * dh + product<S>(Mat<S>(q.cwiseProduct(b)), true, d_o, false);
  }
  r.dh0 = std::move(dh);
  return r;
}

/// \brief `chunk_bwd_dqkv` of chunk c, dh the gradient of the state after it: dq, dk, dv of
/// its rows, and dG, the gradient of the global log-decay G from its terms,
/// \f$ \tilde q \odot d\tilde q - k \odot dk \f$, the terms of the score's diagonal
/// \f$ A_{tt} \f$ (no decay) left out, as they cancel in it exactly.
template <class S> struct ChunkQKVGrads { Mat<S> dq, dk, dv, dG; };
template <Scalar S>
ChunkQKVGrads<S> chunk_bwd_dqkv(const Head<S> &x, const HeadCotangent<S> &ct, const S &scale,
                                const detail::ChunkPass<S> &p, const shared::ChunkRange &chunk,
                                std::size_t c, const Mat<S> &dh) {
  using shared::product;
  using shared::Structure;
  const auto [s, n] = chunk;
  const Mat<S> q = scale * x.q.middleRows(s, n), k = x.k.middleRows(s, n);
  const Mat<S> v = x.v.middleRows(s, n), d_o = ct.d_o.middleRows(s, n);
  const Mat<S> &g_cum = p.g_cum[c];
  const Mat<S> &h = p.fwd.stages.h[c], &A = p.fwd.stages.A[c];
  const shared::ChunkDecay<S> &decay = p.decay[c];
  const Mat<S> &b = decay.up(); // e^{g_cum}
  const Mat<S> to_end = shared::chunk_decay_to_end(decay, g_cum);
  // dA = dO V^T . M, its diagonal apart: the terms i = j of dq~ and dk, dA_ii k_i and
  // dA_ii q~_i (no decay), cancel in dL/dG exactly, and are left out of it
  const Mat<S> dA = product<S>(d_o, false, v, true, Structure::lower_result);
  const Vec<S> dA_diagonal = dA.diagonal();
  const Mat<S> dA_strict = dA.template triangularView<Eigen::StrictlyLower>();

  ChunkQKVGrads<S> r;
  r.dv = product<S>(A, true, d_o, false, Structure::left_upper) +
         product<S>(Mat<S>(k.cwiseProduct(to_end)), false, dh, false);
  const Mat<S> dq_tilde =
      b.cwiseProduct(product<S>(d_o, false, h, true)) + decay.grad_left(dA_strict, k);
  const Mat<S> dk =
      decay.grad_right(dA_strict, q) + to_end.cwiseProduct(product<S>(v, false, dh, true));
  r.dG = q.cwiseProduct(dq_tilde) - k.cwiseProduct(dk); // q~ . dq~ - k . dk
  r.dq = scale * (dq_tilde + dA_diagonal.asDiagonal() * k);
  r.dk = dk + dA_diagonal.asDiagonal() * q;
  return r;
}

/// \brief `chunk_bwd_dg`: \f$ \partial L / \partial G_t \f$ with the final state's term
/// \f$ [t = T]\,\mathrm{rowsum}(S_T \odot dS_T) \f$ added, then the reverse cumulative
/// sum \f$ dg_t = \sum_{s \ge t} \partial L / \partial G_s \f$.
template <Scalar S> Mat<S> chunk_bwd_dg(Mat<S> dG, const Mat<S> &ht, const Mat<S> &d_ht) {
  const Eigen::Index L = dG.rows();
  if (L > 0)
    dG.row(L - 1) += ht.cwiseProduct(d_ht).rowwise().sum().transpose();
  for (Eigen::Index t = L - 1; t-- > 0;)
    dG.row(t) += dG.row(t + 1);
  return dG;
}

/// \brief One head, chunkwise analytic backward of \f$ \langle dO, O\rangle + \langle dS_T,
/// S_T\rangle \f$, stage by stage as the kernels run it: chunk_bwd_dh (the state's gradient
/// at every chunk), chunk_bwd_dqkv (each chunk on its own), chunk_bwd_dg. The gate gradient
/// uses the identity, exact for every form, \f$ \partial L / \partial G_t = \tilde q_t \odot
/// d\tilde q_t - k_t \odot dk_t + [t = T]\,\mathrm{rowsum}(S_T \odot dS_T) \f$ on the global
/// log-decay G; the terms of \f$ d\tilde q_t \f$ and \f$ dk_t \f$ from the score
/// \f$ A_{tt} \f$ (no decay) cancel in it exactly and are left out, so that their rounding
/// stays out of dg, as kernels do. The forward is run once, for the states, the scores and the
/// decays (not the output).
template <Scalar S>
HeadGrads<S> chunk_backward_head(const Head<S> &x, const HeadCotangent<S> &ct, const S &scale,
                                 std::size_t C) {
  const Eigen::Index L = x.q.rows(), K = x.q.cols();
  detail::ChunkPass<S> p;
  detail::chunk_forward_pass(x, scale, C, false, p);
  const auto chunks = shared::chunks_of(L, C);
  HeadGrads<S> d{Mat<S>::Zero(L, K),          Mat<S>::Zero(L, K), Mat<S>::Zero(L, x.v.cols()),
                 Mat<S>::Zero(L, x.g.cols()), Vec<S>(),           Mat<S>()};
  StateGrads<S> dh = chunk_bwd_dh(x, ct, scale, p, chunks);
  Mat<S> dG = Mat<S>::Zero(L, K); // dL/dG of the global log-decay G, from each chunk's terms
  for (std::size_t c = 0; c < chunks.size(); ++c) {
    const auto [s, n] = chunks[c];
    ChunkQKVGrads<S> g = chunk_bwd_dqkv(x, ct, scale, p, chunks[c], c, dh.dh[c]);
    d.dq.middleRows(s, n) = g.dq;
    d.dk.middleRows(s, n) = g.dk;
    d.dv.middleRows(s, n) = g.dv;
    dG.middleRows(s, n) = g.dG;
  }
  if (x.g.cols() > 0)
    d.dg = chunk_bwd_dg(std::move(dG), p.fwd.out.ht, ct.d_ht);
  d.dh0 = std::move(dh.dh0);
  return d;
}

} // namespace ruleproof::gla
