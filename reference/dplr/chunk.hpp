// ruleproof: DPLR, chunkwise form and its analytic backward, as seed 001 derives them
// (WY vectors w, c; E = F^-1; the matrix form of S and O; the backward of its "Gated DPLR
// Backward" section), transposed to the [K, V] layout and written for the form of its last
// section, "DPLR without explicit gating":
//   S_t = (A_t - a_t d_t^T) S_{t-1} + k_t v_t^T,   A_t = Diag(exp(g_t)),
// which the three parameterisations reduce to (dplr.hpp): with d_t = alpha_t . b_t the
// note's gated form, with a -> b, d -> -a flash-linear-attention's. No factor exp(-g) is ever
// formed: B<- = B . Gamma of the note is D . exp(Gamma_excl), Gamma_excl the exclusive
// cumulative log-decay of the chunk (the note's last section writes D alone: wrong).
//
// Notation, per chunk of n rows starting at state h (K x V): Gamma = g_cum (n x K, chunk-local
// cumulative log-decay), Gamma_excl its row above (0 on the first row), Q<- = Q~ . e^Gamma,
// K-> = K . e^-Gamma, A-> = A . e^-Gamma, B<- = D . e^Gamma_excl, M the causal mask with its
// diagonal, M_-1 without. Every pair of decays exp(Gamma_i - Gamma_j) goes through gla's
// ChunkDecay, which factors it only where the exponent range of S allows.
//   A_qk = Q<- K->^T . M,  A_qa = Q<- A->^T . M,  A_ba = B<- A->^T . M_-1,  A_bk = B<- K->^T . M_-1
//   F = I + A_ba, E = F^-1, W = E B<-, C = -E A_bk V                       (seed 001, WY)
//   V2 = C - W h                                                             (V_[t],2)
//   O = Q<- h + A_qk V + A_qa V2                                              (O_[t])
//   h' = Diag(e^Gamma_last) h + (K . e^(Gamma_last - Gamma))^T V + (A . e^(..))^T V2   (S^C_[t])
// and the chunk's transition h' = P h + H with P = Diag(e^Gamma_last) - A_end^T W,
// H = K_end^T V + A_end^T C (the note's P^C_[t] and H^C_[t], transposed).
#pragma once

#include <vector>

#include "../low_rank/chunk.hpp"

namespace ruleproof::dplr {

using namespace low_rank; // the stages shared with gated_oja (low_rank/chunk.hpp)

namespace detail {
using namespace shared;

/// Row r of the result is row r + 1 of x; the last row is zero.
template <Scalar S> Mat<S> shift_up(const Mat<S> &x) {
  Mat<S> y = Mat<S>::Zero(x.rows(), x.cols());
  if (x.rows() > 1)
    y.topRows(x.rows() - 1) = x.bottomRows(x.rows() - 1);
  return y;
}

/// Row r of the result is row r - 1 of x; the first row is zero (the adjoint of shift_up).
template <Scalar S> Mat<S> shift_down(const Mat<S> &x) {
  Mat<S> y = Mat<S>::Zero(x.rows(), x.cols());
  if (x.rows() > 1)
    y.bottomRows(x.rows() - 1) = x.topRows(x.rows() - 1);
  return y;
}

/// \brief \f$ R_{ri} = \sum_c X_{rc} Y_{ic} e^{\Gamma_{r-1,c} - \Gamma_{ic}} \f$ for i < r,
/// zero elsewhere: \f$ (X \odot e^{\Gamma_{excl}}) (Y \odot e^{-\Gamma})^\top \odot M_{-1}
/// \f$, every exponent <= 0, through ChunkDecay on the rows of X moved up by one.
template <Scalar S>
Mat<S> scores_exclusive(const ChunkDecay<S> &decay, const Mat<S> &X, const Mat<S> &Y) {
  return shift_down(decay.scores(shift_up(X), Y));
}

/// The gradients of scores_exclusive: dX (left) and dY (right) for a strictly lower dR.
template <class S> struct ScoreGrads { Mat<S> left, right; };
template <Scalar S>
ScoreGrads<S> scores_exclusive_bwd(const ChunkDecay<S> &decay, const Mat<S> &dR, const Mat<S> &X,
                                   const Mat<S> &Y) {
  const Mat<S> dZ = shift_up(strictly_lower(dR)), X_up = shift_up(X);
  return {shift_down(decay.grad_left(dZ, Y)), decay.grad_right(dZ, X_up)};
}
} // namespace detail

/// \brief `chunk_dplr_fwd_intra`: the four masked score matrices of every chunk and the
/// decayed rows the WY and output stages use.
template <class S> struct Intra {
  std::vector<Mat<S>> A_qk; ///< n x n, \f$ Q^{\leftarrow} K^{\rightarrow\top} \odot M \f$
  std::vector<Mat<S>> A_qa; ///< n x n, \f$ Q^{\leftarrow} A^{\rightarrow\top} \odot M \f$
  std::vector<Mat<S>> A_ba; ///< n x n, \f$ B^{\leftarrow} A^{\rightarrow\top} \odot M_{-1} \f$
  std::vector<Mat<S>> A_bk; ///< n x n, \f$ B^{\leftarrow} K^{\rightarrow\top} \odot M_{-1} \f$
  Mat<S> q_left;            ///< L x K, \f$ Q^{\leftarrow} = \tilde Q \odot e^{\Gamma} \f$
  Mat<S>
      b_left; ///< L x K, \f$ B^{\leftarrow} = D \odot e^{\Gamma_{excl}} \f$ (the note's B . Gamma)
};

template <Scalar S>
Intra<S> chunk_dplr_fwd_intra(const Mat<S> &q, const Mat<S> &k, const Mat<S> &a, const Mat<S> &d,
                              const Mat<S> &g_cum, const S &scale, std::size_t C) {
  Intra<S> r;
  r.q_left = Mat<S>(q.rows(), q.cols());
  r.b_left = Mat<S>(d.rows(), d.cols());
  for (const auto &[s, n] : shared::chunks_of(q.rows(), C)) {
    const Mat<S> qc = scale * q.middleRows(s, n), kc = k.middleRows(s, n);
    const Mat<S> ac = a.middleRows(s, n), dc = d.middleRows(s, n);
    const Mat<S> gc = g_cum.middleRows(s, n);
    const shared::ChunkDecay<S> decay(gc);
    r.A_qk.push_back(decay.scores(qc, kc));                    // seed 001: Q<- K->^T . M
    r.A_qa.push_back(decay.scores(qc, ac));                    // seed 001: Q<- A->^T . M
    r.A_ba.push_back(detail::scores_exclusive(decay, dc, ac)); // seed 001: B<- A->^T . M_-1
    r.A_bk.push_back(detail::scores_exclusive(decay, dc, kc)); // seed 001: B<- K->^T . M_-1
    r.q_left.middleRows(s, n) = qc.cwiseProduct(shared::exp_of(gc));
    r.b_left.middleRows(s, n) = dc.cwiseProduct(shared::exp_of(detail::shift_down(gc)));
  }
  return r;
}

/// The WY vectors of one sequence, chunk after chunk.
template <class S> struct WC {
  Mat<S> w; ///< L x K, \f$ W = E B^{\leftarrow} \f$
  Mat<S> c; ///< L x V, \f$ C = -E A_{bk} V \f$
};

/// \brief `recompute_w_c`: seed 001's \f$ W = E B^{\leftarrow} \f$ and \f$ C = -E (B^{\leftarrow}
/// K^{\rightarrow\top} \odot M_{-1}) V \f$ per chunk, E from solve_tril(A_ba).
template <Scalar S>
WC<S> recompute_w_c(const Mat<S> &v, const Intra<S> &intra, const std::vector<Mat<S>> &E,
                    std::size_t C) {
  WC<S> r{Mat<S>(v.rows(), intra.b_left.cols()), Mat<S>(v.rows(), v.cols())};
  const auto chunks = shared::chunks_of(v.rows(), C);
  for (std::size_t c = 0; c < chunks.size(); ++c) {
    const auto [s, n] = chunks[c];
    r.w.middleRows(s, n) = shared::mul<S>(E[c], intra.b_left.middleRows(s, n)); // seed 001: W
    r.c.middleRows(s, n) =
        -shared::mul<S>(E[c], shared::mul<S>(intra.A_bk[c], v.middleRows(s, n))); // seed 001: C
  }
  emulation::store<S>(r.w); // kernels store w and c in 16 bits
  emulation::store<S>(r.c);
  return r;
}

/// \brief `chunk_dplr_fwd_wy`: chunk_dplr_fwd_intra, solve_tril and recompute_w_c of every
/// chunk, as one kernel runs them: the four score matrices, F = I + A_ba, E = F^-1 and the WY
/// vectors w, c.
template <class S> struct WYForward {
  Intra<S> intra;
  std::vector<Mat<S>> F, E;
  WC<S> wc;
};
template <Scalar S>
WYForward<S> chunk_dplr_fwd_wy(const Head<S> &x, const Mat<S> &g_cum, const S &scale,
                               std::size_t C) {
  WYForward<S> r;
  r.intra = chunk_dplr_fwd_intra(x.q, x.k, x.a, x.b, g_cum, scale, C);
  for (const Mat<S> &A_ba : r.intra.A_ba)
    r.F.push_back(Mat<S>::Identity(A_ba.rows(), A_ba.cols()) + A_ba); // seed 001: F
  r.E = solve_tril(r.intra.A_ba);                                     // seed 001: E = F^-1
  r.wc = recompute_w_c(x.v, r.intra, r.E, C);
  return r;
}

/// The state recursion of one sequence.
template <class S> struct StateChain {
  std::vector<Mat<S>> h; ///< K x V state at each chunk start (h[0] = initial state)
  std::vector<Mat<S>> P; ///< K x K per chunk, the transition \f$ h' = P h + H \f$
  std::vector<Mat<S>> H; ///< K x V per chunk
  Mat<S> v2;             ///< L x V, \f$ V_{[t],2} = C - W h \f$ chunk by chunk
  Mat<S> ht;             ///< K x V state after the last chunk
};

/// \brief `chunk_dplr_fwd_h`: per chunk \f$ V_2 = C - W h \f$, then \f$ h' =
/// \mathrm{Diag}(e^{\Gamma_{last}}) h + K_{end}^\top V + A_{end}^\top V_2 \f$ with
/// \f$ X_{end} = X \odot e^{\Gamma_{last} - \Gamma} \f$ (seed 001's matrix form of \f$
/// S^C_{[t]} \f$, transposed).
template <Scalar S>
StateChain<S> chunk_dplr_fwd_h(const Mat<S> &k, const Mat<S> &a, const Mat<S> &v, const WC<S> &wc,
                               const Mat<S> &g_cum, const Mat<S> &h0, std::size_t C) {
  StateChain<S> r{{}, {}, {}, Mat<S>(v.rows(), v.cols()), h0};
  for (const auto &[s, n] : shared::chunks_of(k.rows(), C)) {
    const Mat<S> gc = g_cum.middleRows(s, n), to_end = shared::decay_to_end(gc);
    const Mat<S> k_end = k.middleRows(s, n).cwiseProduct(to_end);
    const Mat<S> a_end = a.middleRows(s, n).cwiseProduct(to_end);
    const Vec<S> gamma = shared::decay_last(gc);
    const Mat<S> v2 = emulation::stored<S>(
        wc.c.middleRows(s, n) - shared::mul<S>(wc.w.middleRows(s, n), r.ht)); // seed 001: V_[t],2
    r.h.push_back(emulation::stored<S>(r.ht)); // kernels store h in 16 bits, carry it in fp32
    r.P.push_back(Mat<S>(gamma.asDiagonal()) -
                  shared::mul<S>(a_end.transpose(), wc.w.middleRows(s, n)));
    r.H.push_back(shared::mul<S>(k_end.transpose(), v.middleRows(s, n)) +
                  shared::mul<S>(a_end.transpose(), wc.c.middleRows(s, n))); // P^C, H^C
    r.ht = gamma.asDiagonal() * r.ht + shared::mul<S>(k_end.transpose(), v.middleRows(s, n)) +
           shared::mul<S>(a_end.transpose(), v2); // seed 001: S^C_[t], transposed
    r.v2.middleRows(s, n) = v2;
  }
  return r;
}

/// \brief `chunk_dplr_fwd_o`: \f$ O = Q^{\leftarrow} h + A_{qk} V + A_{qa} V_2 \f$ per chunk.
template <Scalar S>
Mat<S> chunk_dplr_fwd_o(const Mat<S> &v, const Intra<S> &intra, const StateChain<S> &chain,
                        std::size_t C) {
  Mat<S> o(v.rows(), v.cols());
  const auto chunks = shared::chunks_of(v.rows(), C);
  for (std::size_t c = 0; c < chunks.size(); ++c) {
    const auto [s, n] = chunks[c];
    o.middleRows(s, n) = shared::mul<S>(intra.q_left.middleRows(s, n), chain.h[c]) +
                         shared::mul<S>(intra.A_qk[c], v.middleRows(s, n)) +
                         shared::mul<S>(intra.A_qa[c], chain.v2.middleRows(s, n)); // O_[t]
  }
  return o;
}

/// \brief The stage intermediates of the chunkwise forward.
template <class S> struct ChunkStages {
  Mat<S> g_cum;          ///< L x K, chunk_local_cumsum of g (the note's log Gamma)
  Intra<S> intra;        ///< A_qk, A_qa, A_ba, A_bk per chunk; Q<-, B<-
  std::vector<Mat<S>> F; ///< n x n per chunk, unit lower: I + A_ba
  std::vector<Mat<S>> E; ///< n x n per chunk, unit lower: F^-1
  Mat<S> w, c;           ///< L x K and L x V, the WY vectors
  std::vector<Mat<S>> h; ///< K x V state at each chunk start (h[0] = initial state)
  std::vector<Mat<S>> P; ///< K x K per chunk
  std::vector<Mat<S>> H; ///< K x V per chunk
  Mat<S> v2;             ///< L x V, C - W h (KDA's v_new is V + V2)
};

template <class S> using ChunkForward = low_rank::ChunkForward<S, ChunkStages<S>>;

/// \brief One head of \f$ S_t = (A_t - a_t d_t^\top) S_{t-1} + k_t v_t^\top \f$ (x.b holds d),
/// chunkwise; any chunk size C >= 1. A head without a gate (x.g with no columns) decays by 1.
template <Scalar S>
ChunkForward<S> chunk_forward_head(const Head<S> &x, const S &scale, std::size_t C) {
  ChunkForward<S> r;
  ChunkStages<S> &st = r.stages;
  const Mat<S> g = x.g.cols() > 0 ? x.g : Mat<S>(Mat<S>::Zero(x.q.rows(), x.q.cols()));
  st.g_cum = chunk_local_cumsum(g, C);
  WYForward<S> wy = chunk_dplr_fwd_wy(x, st.g_cum, scale, C);
  st.intra = std::move(wy.intra);
  st.F = std::move(wy.F);
  st.E = std::move(wy.E);
  WC<S> &wc = wy.wc;
  StateChain<S> chain = chunk_dplr_fwd_h(x.k, x.a, x.v, wc, st.g_cum, x.h0, C);
  r.out.o = chunk_dplr_fwd_o(x.v, st.intra, chain, C);
  r.out.ht = std::move(chain.ht);
  st.w = std::move(wc.w);
  st.c = std::move(wc.c);
  st.h = std::move(chain.h);
  st.P = std::move(chain.P);
  st.H = std::move(chain.H);
  st.v2 = std::move(chain.v2);
  return r;
}

template <Scalar S> HeadOutput<S> chunk_head(const Head<S> &x, const S &scale, std::size_t C) {
  return chunk_forward_head(x, scale, C).out;
}

/// The backward state recursion of one sequence.
template <class S> struct StateGrads {
  std::vector<Mat<S>> dh; ///< K x V per chunk: gradient of the state after that chunk
  Mat<S> dv2;             ///< L x V, the whole gradient of V2 (= the note's dC)
  Mat<S> dh0;             ///< gradient of the initial state
};

/// \brief `chunk_dplr_bwd_dhu`: chunks walked backwards from \f$ dh = dS_T \f$; per chunk
/// \f$ dC = dV_2 = A_{end}\, dh + A_{qa}^\top dO \f$, then the gradient of its start state
/// \f$ \mathrm{Diag}(e^{\Gamma_{last}}) dh + Q^{\leftarrow\top} dO - W^\top dV_2 \f$
/// (seed 001: dC, and dS_[t-1], transposed).
template <Scalar S>
StateGrads<S> chunk_dplr_bwd_dhu(const Mat<S> &a, const ChunkStages<S> &st, const Mat<S> &d_o,
                                 const Mat<S> &d_ht, std::size_t C) {
  const auto chunks = shared::chunks_of(a.rows(), C);
  StateGrads<S> r{std::vector<Mat<S>>(chunks.size()), Mat<S>(d_o.rows(), d_o.cols()), d_ht};
  for (std::size_t c = chunks.size(); c-- > 0;) {
    const auto [s, n] = chunks[c];
    const Mat<S> gc = st.g_cum.middleRows(s, n);
    const Mat<S> a_end = a.middleRows(s, n).cwiseProduct(shared::decay_to_end(gc));
    r.dh[c] = emulation::stored<S>(r.dh0); // kernels store dh and dv2 in 16 bits
    const Mat<S> dv2 = emulation::stored<S>(
        shared::mul<S>(a_end, r.dh0) +
        shared::mul<S>(st.intra.A_qa[c].transpose(), d_o.middleRows(s, n))); // seed 001: dC
    r.dh0 = shared::decay_last(gc).asDiagonal() * r.dh0 +
            shared::mul<S>(st.intra.q_left.middleRows(s, n).transpose(), d_o.middleRows(s, n)) -
            shared::mul<S>(st.w.middleRows(s, n).transpose(), dv2); // seed 001: dS_[t-1]
    r.dv2.middleRows(s, n) = dv2;
  }
  return r;
}

/// \brief `chunk_dplr_bwd_wy`, chunk c: seed 001's backward through the WY part,
/// \f$ dW = -dC\, S_{[t-1]}^\top \f$ (the chunk's start state; the note writes
/// \f$ S_{[t]} \f$), \f$ dE = -dC\, (A_{bk} V)^\top + dW B^{\leftarrow\top} \f$,
/// \f$ dF = -E^\top dE\, E^\top \f$, and the gradients of the scores it reaches,
/// \f$ dA_{ba} = dF \odot M_{-1} \f$, \f$ dA_{bk} = -(E^\top dC\, V^\top) \odot M_{-1} \f$.
template <class S> struct WYGrads { Mat<S> dw, Et_dc, dA_ba, dA_bk; };
template <Scalar S>
WYGrads<S> chunk_dplr_bwd_wy(const Head<S> &x, const ChunkStages<S> &st, const StateGrads<S> &dhu,
                             const shared::ChunkRange &chunk, std::size_t c) {
  using shared::mul;
  const auto [s, n] = chunk;
  const Mat<S> vc = x.v.middleRows(s, n), dv2c = dhu.dv2.middleRows(s, n);
  const Mat<S> b_left = st.intra.b_left.middleRows(s, n);
  const Mat<S> &h = st.h[c], &E = st.E[c], &A_bk = st.intra.A_bk[c];
  WYGrads<S> r;
  r.dw = -mul<S>(dv2c, h.transpose());
  r.Et_dc = mul<S>(E.transpose(), dv2c);
  const Mat<S> dE = -mul<S>(dv2c, mul<S>(A_bk, vc).transpose()) + mul<S>(r.dw, b_left.transpose());
  const Mat<S> dF = -mul<S>(mul<S>(E.transpose(), dE), E.transpose());
  r.dA_ba = shared::strictly_lower(dF);
  r.dA_bk = shared::strictly_lower(Mat<S>(-mul<S>(r.Et_dc, vc.transpose())));
  return r;
}

/// \brief `chunk_dplr_bwd_dqk`, chunk c: the gradients of its rows, dq, dk, dv, da, db (= dd),
/// and \f$ \delta \log \Gamma \f$ before the suffix sum, by seed 001's identity
/// \f$ \delta \log \Gamma = dQ \odot Q + dB \odot B - dK \odot K - dA \odot A +
/// [0, \ldots, \mathrm{diag}(S^\top dS)] \f$, which for d (whose decay is the exclusive one)
/// puts \f$ d_{r+1} \odot dd_{r+1} \f$ on row r.
template <class S> struct ChunkGrads { Mat<S> dq, dk, dv, da, db, dgamma; };
template <Scalar S>
ChunkGrads<S> chunk_dplr_bwd_dqk(const Head<S> &x, const HeadCotangent<S> &ct, const S &scale,
                                 const ChunkForward<S> &fwd, const StateGrads<S> &dhu,
                                 const WYGrads<S> &wy, const shared::ChunkRange &chunk,
                                 std::size_t c, std::size_t chunk_count) {
  using shared::mul;
  const ChunkStages<S> &st = fwd.stages;
  const auto [s, n] = chunk;
  const Mat<S> qc = scale * x.q.middleRows(s, n), kc = x.k.middleRows(s, n);
  const Mat<S> ac = x.a.middleRows(s, n), dc = x.b.middleRows(s, n), vc = x.v.middleRows(s, n);
  const Mat<S> gc = st.g_cum.middleRows(s, n), d_oc = ct.d_o.middleRows(s, n);
  const Mat<S> v2c = st.v2.middleRows(s, n);
  const Mat<S> &h = st.h[c], &dh = dhu.dh[c], &E = st.E[c];
  const Mat<S> &A_qk = st.intra.A_qk[c], &A_bk = st.intra.A_bk[c];
  const shared::ChunkDecay<S> decay(gc);
  const Mat<S> to_end = shared::decay_to_end(gc);

  // dA_qk and dA_qa without their diagonals: the terms i = j of dQ<-, dK-> and dA-> (no
  // decay) cancel in delta log Gamma exactly and are left out of it, added to the gradients
  const Mat<S> dA_qk = shared::strictly_lower(mul<S>(d_oc, vc.transpose()));
  const Mat<S> dA_qa = shared::strictly_lower(mul<S>(d_oc, v2c.transpose()));
  const Vec<S> dA_qk_diagonal = d_oc.cwiseProduct(vc).rowwise().sum();
  const Vec<S> dA_qa_diagonal = d_oc.cwiseProduct(v2c).rowwise().sum();
  ChunkGrads<S> r;
  // seed 001, dV = dV_1 - A_bk^T E^T dC with dV_1 = K_end dS + A_qk^T dO
  r.dv = mul<S>(kc.cwiseProduct(to_end), dh) + mul<S>(A_qk.transpose(), d_oc) -
         mul<S>(A_bk.transpose(), wy.Et_dc);
  // seed 001, dQ<- = dO S_[t-1]^T + (dO V1^T . M) K-> + (dO V2^T . M) A->, times Gamma
  const Mat<S> dq_tilde = shared::exp_of(gc).cwiseProduct(mul<S>(d_oc, h.transpose())) +
                          decay.grad_left(dA_qk, kc) + decay.grad_left(dA_qa, ac);
  // seed 001, dK-> and dA->, with the state-update terms V dS^T, V2 dS^T the note omits
  const detail::ScoreGrads<S> g_ba = detail::scores_exclusive_bwd(decay, wy.dA_ba, dc, ac);
  const detail::ScoreGrads<S> g_bk = detail::scores_exclusive_bwd(decay, wy.dA_bk, dc, kc);
  const Mat<S> dk =
      decay.grad_right(dA_qk, qc) + to_end.cwiseProduct(mul<S>(vc, dh.transpose())) + g_bk.right;
  const Mat<S> da =
      decay.grad_right(dA_qa, qc) + to_end.cwiseProduct(mul<S>(v2c, dh.transpose())) + g_ba.right;
  // seed 001, dB<- = E^T dW - (E^T dC V^T . M_-1) K-> + (dF . M_-1) A->, times Gamma_excl
  const Mat<S> dd =
      shared::exp_of(detail::shift_down(gc)).cwiseProduct(mul<S>(E.transpose(), wy.dw)) +
      g_bk.left + g_ba.left;
  // seed 001, delta log Gamma (d's decay is exclusive: its term sits one row up)
  r.dgamma = qc.cwiseProduct(dq_tilde) - kc.cwiseProduct(dk) - ac.cwiseProduct(da) +
             detail::shift_up(Mat<S>(dc.cwiseProduct(dd)));
  const Mat<S> h_end = c + 1 < chunk_count ? st.h[c + 1] : fwd.out.ht;
  r.dgamma.row(n - 1) += h_end.cwiseProduct(dh).rowwise().sum().transpose(); // diag(S^T dS)
  r.dq = scale * (dq_tilde + dA_qk_diagonal.asDiagonal() * kc + dA_qa_diagonal.asDiagonal() * ac);
  r.dk = dk + dA_qk_diagonal.asDiagonal() * qc;
  r.da = da + dA_qa_diagonal.asDiagonal() * qc;
  r.db = dd;
  return r;
}

/// \brief One head, chunkwise analytic backward of \f$ \langle dO, O\rangle + \langle dS_T,
/// S_T\rangle \f$ for \f$ S_t = (A_t - a_t d_t^\top) S_{t-1} + k_t v_t^\top \f$ (x.b holds
/// d; the gradients come back as da, db = dd). Seed 001's backward, stage by stage as the
/// kernels run it: chunk_dplr_bwd_dhu (the state's gradient at every chunk), then for each chunk
/// chunk_dplr_bwd_wy (dW, dE, dF) and chunk_dplr_bwd_dqk (dQ<-, dB<-, dK->, dA->, dV and
/// \f$ \delta \log \Gamma \f$); then the suffix sum inside every chunk.
template <Scalar S>
HeadGrads<S> chunk_backward_head(const Head<S> &x, const HeadCotangent<S> &ct, const S &scale,
                                 std::size_t C) {
  const Eigen::Index L = x.q.rows(), K = x.q.cols(), V = x.v.cols();
  const ChunkForward<S> fwd = chunk_forward_head(x, scale, C);
  const ChunkStages<S> &st = fwd.stages;
  const StateGrads<S> dhu = chunk_dplr_bwd_dhu(x.a, st, ct.d_o, ct.d_ht, C);
  HeadGrads<S> d;
  d.dq = Mat<S>(L, K);
  d.dk = Mat<S>(L, K);
  d.dv = Mat<S>(L, V);
  d.da = Mat<S>(L, K);
  d.db = Mat<S>(L, K);
  Mat<S> dgamma(L, K);
  const auto chunks = shared::chunks_of(L, C);
  for (std::size_t c = 0; c < chunks.size(); ++c) {
    const auto [s, n] = chunks[c];
    const WYGrads<S> wy = chunk_dplr_bwd_wy(x, st, dhu, chunks[c], c);
    ChunkGrads<S> g = chunk_dplr_bwd_dqk(x, ct, scale, fwd, dhu, wy, chunks[c], c, chunks.size());
    d.dq.middleRows(s, n) = g.dq;
    d.dk.middleRows(s, n) = g.dk;
    d.dv.middleRows(s, n) = g.dv;
    d.da.middleRows(s, n) = g.da;
    d.db.middleRows(s, n) = g.db;
    dgamma.middleRows(s, n) = g.dgamma;
  }
  d.dg = x.g.cols() > 0 ? chunk_local_cumsum_reverse(dgamma, C) : Mat<S>(L, 0);
  d.dbeta = Vec<S>();
  d.dh0 = dhu.dh0;
  return d;
}

template <Scalar S> double chunk_condition(const Head<S> &x, const S &scale, std::size_t C) {
  const auto st = chunk_forward_head(x, scale, C).stages;
  double kappa = 1;
  for (std::size_t i = 0; i < st.E.size(); ++i)
    kappa = std::max(kappa, shared::condition_inf(st.intra.A_ba[i], st.E[i]));
  return kappa;
}

} // namespace ruleproof::dplr
