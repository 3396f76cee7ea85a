// ruleproof: KDA (and through it Gated DeltaNet and the delta rule), chunkwise form and its
// analytic backward, stage by stage as seed 003 lays them out and as flash-linear-attention
// names them: chunk_local_cumsum, chunk_scaled_dot_kkt (A0), solve_tril (A), recompute_w_u
// (w, u), chunk_fwd_h (h, v_new), chunk_fwd_o; backward chunk_bwd_dv_local, chunk_bwd_dhu,
// chunk_bwd_dqkwg, prepare_wy_repr_bwd. Seed 003 writes them for a scalar gate; here the
// gate is per key (L x K), every decay factor exp(g_cum_i - g_cum_j) going through gla's
// ChunkDecay, which factors it only where the exponent range of S allows, row by row. Where seed
// 003 and the recurrence disagree, this code follows the recurrence (the comments say where).
//
// Notation, per chunk of n rows starting at state h (K x V): Gamma = g_cum (n x K, local
// cumulative log-decay), K< = K . e^Gamma, K> = K . e^-Gamma, Q~ = scale Q.
#pragma once

#include <vector>

#include "../gla/chunk.hpp"

namespace ruleproof::kda {

using gla::chunk_local_cumsum;

namespace detail {
using gla::detail::ChunkDecay;
using gla::detail::chunks_of;
using gla::detail::decay_to_end;
using gla::detail::exp_of;

template <Scalar S> Mat<S> strictly_lower(const Mat<S> &A) {
  return A.template triangularView<Eigen::StrictlyLower>();
}
template <Scalar S> Mat<S> lower(const Mat<S> &A) {
  return A.template triangularView<Eigen::Lower>();
}
/// Row n - 1 of a chunk's g_cum as a K-vector of decays e^{Gamma_last}.
template <Scalar S> Vec<S> decay_last(const Mat<S> &g_cum) {
  return exp_of(Mat<S>(g_cum.row(g_cum.rows() - 1).transpose()));
}

} // namespace detail

/// \brief The suffix sum inside every chunk, \f$ d g_t = \sum_{s = t}^{c_1} d\Gamma_s \f$
/// (flash-linear-attention's `chunk_local_cumsum(..., reverse=True)`): the adjoint of
/// chunk_local_cumsum.
template <Scalar S> Mat<S> chunk_local_cumsum_reverse(const Mat<S> &dg_cum, std::size_t C) {
  Mat<S> dg = dg_cum;
  for (const auto &[s, n] : detail::chunks_of(dg.rows(), C))
    for (Eigen::Index t = s + n - 1; t-- > s;)
      dg.row(t) += dg.row(t + 1);
  return dg;
}

/// \brief `chunk_scaled_dot_kkt`: \f$ A_0 = \mathrm{Diag}(\beta) (K^{\leftarrow}
/// K^{\rightarrow\top} \odot M_{-1}) \f$ per chunk, n x n, strictly lower triangular.
template <Scalar S>
std::vector<Mat<S>> chunk_scaled_dot_kkt(const Mat<S> &k, const Vec<S> &beta, const Mat<S> &g_cum,
                                         std::size_t C) {
  std::vector<Mat<S>> A0;
  for (const auto &[s, n] : detail::chunks_of(k.rows(), C)) {
    const Mat<S> kc = k.middleRows(s, n), gc = g_cum.middleRows(s, n);
    const detail::ChunkDecay<S> decay(gc);
    const Mat<S> kkt = detail::strictly_lower(decay.scores(kc, kc));
    A0.push_back(beta.segment(s, n).asDiagonal() * kkt); // seed 003, forward step 2
  }
  return A0;
}

/// \brief `solve_tril`: \f$ A = (I + A_0)^{-1} \f$ per chunk, by forward substitution on
/// the unit lower triangular \f$ I + A_0 \f$; A is unit lower triangular.
template <Scalar S> std::vector<Mat<S>> solve_tril(const std::vector<Mat<S>> &A0) {
  std::vector<Mat<S>> A;
  for (const Mat<S> &a0 : A0) {
    const Mat<S> I = Mat<S>::Identity(a0.rows(), a0.cols());
    const Mat<S> unit_lower = I + a0;
    A.push_back(unit_lower.template triangularView<Eigen::Lower>().solve(I)); // seed 003, step 2
  }
  return A;
}

/// The WY (UT) representation of one sequence: L x K and L x V, chunk after chunk.
template <class S> struct WU {
  Mat<S> w; ///< \f$ \overleftarrow{W} = A\,\mathrm{Diag}(\beta) (K \odot e^{\Gamma}) \f$
  Mat<S> u; ///< \f$ U = A\,\mathrm{Diag}(\beta) V \f$
};

/// \brief `recompute_w_u`: \f$ U = A\,\mathrm{Diag}(\beta) V \f$ and
/// \f$ \overleftarrow{W} = A\,\mathrm{Diag}(\beta) (K \odot e^{\Gamma}) \f$ per chunk.
template <Scalar S>
WU<S> recompute_w_u(const Mat<S> &k, const Mat<S> &v, const Vec<S> &beta,
                    const std::vector<Mat<S>> &A, const Mat<S> &g_cum, std::size_t C) {
  WU<S> r{Mat<S>(k.rows(), k.cols()), Mat<S>(v.rows(), v.cols())};
  const auto chunks = detail::chunks_of(k.rows(), C);
  for (std::size_t c = 0; c < chunks.size(); ++c) {
    const auto [s, n] = chunks[c];
    const Mat<S> k_decayed = k.middleRows(s, n).cwiseProduct(
        detail::exp_of(Mat<S>(g_cum.middleRows(s, n)))); // K<, exponents <= 0
    const Vec<S> b = beta.segment(s, n);
    r.u.middleRows(s, n) = A[c] * (b.asDiagonal() * v.middleRows(s, n)); // seed 003, step 3
    r.w.middleRows(s, n) = A[c] * (b.asDiagonal() * k_decayed);          // seed 003, step 3
  }
  return r;
}

/// The state recursion of one sequence.
template <class S> struct StateChain {
  std::vector<Mat<S>> h; ///< K x V state at each chunk start (h[0] = initial state)
  Mat<S> v_new;          ///< L x V, \f$ U - \overleftarrow{W} h \f$ chunk by chunk
  Mat<S> ht;             ///< K x V state after the last chunk
};

/// \brief `chunk_fwd_h`: per chunk \f$ V_{new} = U - \overleftarrow{W} h \f$, then
/// \f$ h' = \mathrm{Diag}(e^{\Gamma_{last}}) h + (K \odot e^{\Gamma_{last} - \Gamma})^\top
/// V_{new} \f$ (seed 003 step 4 writes the first factor as \f$ \gamma^C \f$, the log itself;
/// the recurrence needs its exponential).
template <Scalar S>
StateChain<S> chunk_fwd_h(const Mat<S> &k, const WU<S> &wu, const Mat<S> &g_cum, const Mat<S> &h0,
                          std::size_t C) {
  StateChain<S> r{{}, Mat<S>(wu.u.rows(), wu.u.cols()), h0};
  for (const auto &[s, n] : detail::chunks_of(k.rows(), C)) {
    const Mat<S> gc = g_cum.middleRows(s, n);
    r.h.push_back(r.ht);
    const Mat<S> v_new = wu.u.middleRows(s, n) - wu.w.middleRows(s, n) * r.ht; // seed 003, step 4
    const Mat<S> k_to_end = k.middleRows(s, n).cwiseProduct(detail::decay_to_end(gc));
    r.ht = detail::decay_last(gc).asDiagonal() * r.ht + k_to_end.transpose() * v_new; // step 4
    r.v_new.middleRows(s, n) = v_new;
  }
  return r;
}

/// \brief `chunk_fwd_o`: \f$ O = (\tilde Q \odot e^{\Gamma}) h + (\tilde Q^{\leftarrow}
/// K^{\rightarrow\top} \odot M) V_{new} \f$ per chunk, M the causal mask with its diagonal.
template <Scalar S>
Mat<S> chunk_fwd_o(const Mat<S> &q, const Mat<S> &k, const Mat<S> &v_new,
                   const std::vector<Mat<S>> &h, const Mat<S> &g_cum, const S &scale,
                   std::size_t C) {
  Mat<S> o(v_new.rows(), v_new.cols());
  const auto chunks = detail::chunks_of(q.rows(), C);
  for (std::size_t c = 0; c < chunks.size(); ++c) {
    const auto [s, n] = chunks[c];
    const Mat<S> qc = scale * q.middleRows(s, n), kc = k.middleRows(s, n);
    const Mat<S> gc = g_cum.middleRows(s, n);
    const detail::ChunkDecay<S> decay(gc);
    o.middleRows(s, n) = qc.cwiseProduct(detail::exp_of(gc)) * h[c] +
                         decay.scores(qc, kc) * v_new.middleRows(s, n); // seed 003, step 5
  }
  return o;
}

/// \brief The stage intermediates of the chunkwise forward, under the kernels' names.
template <class S> struct ChunkStages {
  Mat<S> g_cum;           ///< L x K, chunk_local_cumsum of g
  std::vector<Mat<S>> A0; ///< n x n per chunk, strictly lower: Diag(beta)(K< K>^T . M_-1)
  std::vector<Mat<S>> A;  ///< n x n per chunk, unit lower: (I + A0)^-1
  Mat<S> w, u;            ///< L x K and L x V, the WY representation
  std::vector<Mat<S>> h;  ///< K x V state at each chunk start (h[0] = initial state)
  Mat<S> v_new;           ///< L x V
};

template <class S> struct ChunkForward {
  HeadOutput<S> out;
  ChunkStages<S> stages;
};

/// \brief One head, chunkwise, seed 003 forward steps 1-5; any chunk size C >= 1.
template <Scalar S>
ChunkForward<S> chunk_forward_head(const Head<S> &x, const S &scale, std::size_t C) {
  ChunkForward<S> r;
  ChunkStages<S> &st = r.stages;
  st.g_cum = chunk_local_cumsum(x.g, C);                         // seed 003, forward step 1
  st.A0 = chunk_scaled_dot_kkt(x.k, x.beta, st.g_cum, C);        // seed 003, forward step 2
  st.A = solve_tril(st.A0);                                      // seed 003, forward step 2
  WU<S> wu = recompute_w_u(x.k, x.v, x.beta, st.A, st.g_cum, C); // seed 003, forward step 3
  StateChain<S> chain = chunk_fwd_h(x.k, wu, st.g_cum, x.h0, C); // seed 003, forward step 4
  r.out.o = chunk_fwd_o(x.q, x.k, chain.v_new, chain.h, st.g_cum, scale, C); // step 5
  r.out.ht = std::move(chain.ht);
  st.w = std::move(wu.w);
  st.u = std::move(wu.u);
  st.h = std::move(chain.h);
  st.v_new = std::move(chain.v_new);
  return r;
}

template <Scalar S> HeadOutput<S> chunk_head(const Head<S> &x, const S &scale, std::size_t C) {
  return chunk_forward_head(x, scale, C).out;
}

/// \brief `chunk_bwd_dv_local`: \f$ dV_{new}|_O = (\tilde Q^{\leftarrow} K^{\rightarrow\top}
/// \odot M)^\top dO \f$ per chunk.
template <Scalar S>
Mat<S> chunk_bwd_dv_local(const Mat<S> &q, const Mat<S> &k, const Mat<S> &g_cum, const Mat<S> &d_o,
                          const S &scale, std::size_t C) {
  Mat<S> dv(d_o.rows(), d_o.cols());
  for (const auto &[s, n] : detail::chunks_of(q.rows(), C)) {
    const Mat<S> qc = scale * q.middleRows(s, n), kc = k.middleRows(s, n);
    const Mat<S> gc = g_cum.middleRows(s, n);
    const detail::ChunkDecay<S> decay(gc);
    dv.middleRows(s, n) = decay.scores(qc, kc).transpose() * d_o.middleRows(s, n); // step 3
  }
  return dv;
}

/// The backward state recursion of one sequence.
template <class S> struct StateGrads {
  std::vector<Mat<S>> dh; ///< K x V per chunk: gradient of the state after that chunk
  Mat<S> dv;              ///< L x V, the whole gradient of v_new (the kernels' dv2)
  Mat<S> dh0;             ///< gradient of the initial state
};

/// \brief `chunk_bwd_dhu`: chunks walked backwards from \f$ dh = dS_T \f$; per chunk
/// \f$ dV_{new} = (K \odot e^{\Gamma_{last} - \Gamma}) dh + dV_{new}|_O \f$, then the
/// gradient of its start state \f$ \mathrm{Diag}(e^{\Gamma_{last}}) dh + (\tilde Q \odot
/// e^{\Gamma})^\top dO - \overleftarrow{W}^\top dV_{new} \f$. The decay is the chunk's own
/// (seed 003 step 4 indexes it by the previous chunk).
template <Scalar S>
StateGrads<S> chunk_bwd_dhu(const Mat<S> &q, const Mat<S> &k, const Mat<S> &w, const Mat<S> &g_cum,
                            const Mat<S> &d_o, const Mat<S> &d_ht, const Mat<S> &dv_local,
                            const S &scale, std::size_t C) {
  const auto chunks = detail::chunks_of(q.rows(), C);
  StateGrads<S> r{std::vector<Mat<S>>(chunks.size()), dv_local, d_ht};
  for (std::size_t c = chunks.size(); c-- > 0;) {
    const auto [s, n] = chunks[c];
    const Mat<S> gc = g_cum.middleRows(s, n), kc = k.middleRows(s, n);
    const Mat<S> qc = scale * q.middleRows(s, n);
    r.dh[c] = r.dh0;
    r.dv.middleRows(s, n) += kc.cwiseProduct(detail::decay_to_end(gc)) * r.dh0; // step 4
    r.dh0 = detail::decay_last(gc).asDiagonal() * r.dh0 +
            qc.cwiseProduct(detail::exp_of(gc)).transpose() * d_o.middleRows(s, n) -
            w.middleRows(s, n).transpose() * r.dv.middleRows(s, n); // seed 003, backward step 4
  }
  return r;
}

/// Gradients from the output and the state recursion, v_new and h held fixed.
template <class S> struct QKWGrads {
  Mat<S> dq; ///< L x K, of q (scale applied)
  Mat<S> dk; ///< L x K, through the scores and the state update
  Mat<S> dw; ///< L x K, of w
  Mat<S> dg; ///< L x K, of g_cum (the local cumulative gate), these paths only
};

/// \brief `chunk_bwd_dqkwg`, per chunk, with \f$ dB = dO V_{new}^\top \odot M \f$ and
/// dh the gradient of the chunk's end state:
/// \f$ d\tilde Q = e^{\Gamma} \odot (dO\, h^\top) + \partial_{left}(dB, K) \f$,
/// \f$ dK = \partial_{right}(dB, \tilde Q) + e^{\Gamma_{last} - \Gamma} \odot (V_{new}
/// dh^\top) \f$, \f$ dW = -dV_{new} h^\top \f$, and the gate through these paths,
/// \f$ d\Gamma = \tilde Q \odot d\tilde Q - K \odot dK \f$ plus, on the last row,
/// \f$ e^{\Gamma_{last}} \odot \mathrm{rowsum}(h \odot dh) + \sum_j K_j \odot dK|_{S,j} \f$.
template <Scalar S>
QKWGrads<S> chunk_bwd_dqkwg(const Mat<S> &q, const Mat<S> &k, const Mat<S> &v_new,
                            const Mat<S> &g_cum, const std::vector<Mat<S>> &h,
                            const std::vector<Mat<S>> &dh, const Mat<S> &d_o, const Mat<S> &dv,
                            const S &scale, std::size_t C) {
  const Eigen::Index L = q.rows(), K = q.cols();
  QKWGrads<S> r{Mat<S>(L, K), Mat<S>(L, K), Mat<S>(L, K), Mat<S>(L, K)};
  const auto chunks = detail::chunks_of(L, C);
  for (std::size_t c = 0; c < chunks.size(); ++c) {
    const auto [s, n] = chunks[c];
    const Mat<S> qc = scale * q.middleRows(s, n), kc = k.middleRows(s, n);
    const Mat<S> gc = g_cum.middleRows(s, n), d_oc = d_o.middleRows(s, n);
    const Mat<S> v_newc = v_new.middleRows(s, n);
    const detail::ChunkDecay<S> decay(gc);
    const Mat<S> dB = detail::lower(Mat<S>(d_oc * v_newc.transpose())); // seed 003, step 5
    const Mat<S> dq_tilde = detail::exp_of(gc).cwiseProduct(d_oc * h[c].transpose()) +
                            decay.grad_left(dB, kc); // seed 003, backward step 5
    const Mat<S> dk_o = decay.grad_right(dB, qc);
    const Mat<S> dk_s = detail::decay_to_end(gc).cwiseProduct(v_newc * dh[c].transpose());
    Mat<S> dgamma = qc.cwiseProduct(dq_tilde) - kc.cwiseProduct(dk_o) - kc.cwiseProduct(dk_s);
    dgamma.row(n - 1) +=
        (detail::decay_last(gc).cwiseProduct(h[c].cwiseProduct(dh[c]).rowwise().sum()) +
         kc.cwiseProduct(dk_s).colwise().sum().transpose())
            .transpose(); // seed 003, step 5: d gamma^C
    r.dq.middleRows(s, n) = scale * dq_tilde;
    r.dk.middleRows(s, n) = dk_o + dk_s;
    r.dw.middleRows(s, n) = -dv.middleRows(s, n) * h[c].transpose();
    r.dg.middleRows(s, n) = dgamma;
  }
  return r;
}

/// Gradients through the WY representation and the triangular solve.
template <class S> struct WYGrads {
  Mat<S> dk;    ///< L x K, through w and A
  Mat<S> dv;    ///< L x V, the whole gradient of v
  Vec<S> dbeta; ///< L
  Mat<S> dg;    ///< L x K, of g_cum through w and A
};

/// \brief `prepare_wy_repr_bwd`, per chunk: \f$ dA = dU (\mathrm{Diag}(\beta) V)^\top + dW
/// (\mathrm{Diag}(\beta) K^{\leftarrow})^\top \f$, \f$ dV = \mathrm{Diag}(\beta) A^\top dU \f$,
/// \f$ dK^{\leftarrow} = \mathrm{Diag}(\beta) A^\top dW \f$, \f$ dA_0 = -(A^\top dA A^\top)
/// \odot M_{-1} \f$, then through \f$ A_0 = \mathrm{Diag}(\beta) X \f$, \f$ X = K^{\leftarrow}
/// K^{\rightarrow\top} \odot M_{-1} \f$ with \f$ dX = \mathrm{Diag}(\beta) dA_0 \f$.
template <Scalar S>
WYGrads<S> prepare_wy_repr_bwd(const Mat<S> &k, const Mat<S> &v, const Vec<S> &beta,
                               const Mat<S> &g_cum, const std::vector<Mat<S>> &A, const Mat<S> &dw,
                               const Mat<S> &du, std::size_t C) {
  const Eigen::Index L = k.rows(), K = k.cols();
  WYGrads<S> r{Mat<S>(L, K), Mat<S>(L, v.cols()), Vec<S>(L), Mat<S>(L, K)};
  const auto chunks = detail::chunks_of(L, C);
  for (std::size_t c = 0; c < chunks.size(); ++c) {
    const auto [s, n] = chunks[c];
    const Mat<S> kc = k.middleRows(s, n), vc = v.middleRows(s, n);
    const Mat<S> gc = g_cum.middleRows(s, n), dwc = dw.middleRows(s, n);
    const Mat<S> duc = du.middleRows(s, n);
    const Vec<S> bc = beta.segment(s, n);
    const Mat<S> &a = A[c];
    const detail::ChunkDecay<S> decay(gc);
    const Mat<S> up = detail::exp_of(gc);
    const Mat<S> k_decayed = kc.cwiseProduct(up); // K<
    const Mat<S> at_du = a.transpose() * duc, at_dw = a.transpose() * dwc;
    const Mat<S> dA = duc * (bc.asDiagonal() * vc).transpose() +
                      dwc * (bc.asDiagonal() * k_decayed).transpose(); // seed 003, step 6
    const Mat<S> dA0 = detail::strictly_lower(Mat<S>(-(a.transpose() * dA * a.transpose())));
    const Mat<S> X = detail::strictly_lower(decay.scores(kc, kc));
    const Mat<S> dX = bc.asDiagonal() * dA0;
    const Mat<S> dk_left = decay.grad_left(dX, kc), dk_right = decay.grad_right(dX, kc);
    const Mat<S> dk_decayed = bc.asDiagonal() * at_dw;
    r.dv.middleRows(s, n) = bc.asDiagonal() * at_du; // seed 003, backward step 6
    r.dk.middleRows(s, n) = up.cwiseProduct(dk_decayed) + dk_left + dk_right;
    r.dbeta.segment(s, n) = at_du.cwiseProduct(vc).rowwise().sum() +
                            at_dw.cwiseProduct(k_decayed).rowwise().sum() +
                            dA0.cwiseProduct(X).rowwise().sum(); // seed 003, backward step 6
    r.dg.middleRows(s, n) = k_decayed.cwiseProduct(dk_decayed) + kc.cwiseProduct(dk_left) -
                            kc.cwiseProduct(dk_right); // seed 003, backward step 6
  }
  return r;
}

/// \brief One head, chunkwise analytic backward of \f$ \langle dO, O\rangle + \langle dS_T,
/// S_T\rangle \f$, seed 003 backward steps 1-7: recompute the forward stages (steps 1-2),
/// dv_local (3), the backward state recursion (4), dq, dk, dw and the gate through the
/// output and the state (5), through the WY representation (6), then the suffix sum that
/// turns the gradient of g_cum into that of g (7).
template <Scalar S>
HeadGrads<S> chunk_backward_head(const Head<S> &x, const HeadCotangent<S> &ct, const S &scale,
                                 std::size_t C) {
  const ChunkForward<S> fwd = chunk_forward_head(x, scale, C); // seed 003, backward steps 1-2
  const ChunkStages<S> &st = fwd.stages;
  const Mat<S> dv_local = chunk_bwd_dv_local(x.q, x.k, st.g_cum, ct.d_o, scale, C); // step 3
  const StateGrads<S> dhu =
      chunk_bwd_dhu(x.q, x.k, st.w, st.g_cum, ct.d_o, ct.d_ht, dv_local, scale, C); // step 4
  const QKWGrads<S> qkw = chunk_bwd_dqkwg(x.q, x.k, st.v_new, st.g_cum, st.h, dhu.dh, ct.d_o,
                                          dhu.dv, scale, C); // seed 003, backward step 5
  const WYGrads<S> wy =
      prepare_wy_repr_bwd(x.k, x.v, x.beta, st.g_cum, st.A, qkw.dw, dhu.dv, C); // step 6
  HeadGrads<S> d;
  d.dq = qkw.dq;
  d.dk = qkw.dk + wy.dk;
  d.dv = wy.dv;
  d.dg = chunk_local_cumsum_reverse(Mat<S>(qkw.dg + wy.dg), C); // seed 003, backward step 7
  d.dbeta = wy.dbeta;
  d.dh0 = dhu.dh0;
  return d;
}

} // namespace ruleproof::kda
