// ruleproof: gated Oja rule, chunkwise form and its analytic backward (derivation in
// BACKWARD.md). Seed 000, section 1.3: the WY representation of the "pseudo" memory decay D
// and incremental memory H, the UT transform (W, U, M), the matrix form of the state and the
// VO-RoPE output, transposed to the [K, V] layout. The rule is KDA with the roles of keys and
// values exchanged, so its first stages are KDA's own, called with v in place of k:
// chunk_scaled_dot_kkt on v (A0), solve_tril (the note's M), recompute_w_u (W, U).
//
// Notation, per chunk of n rows starting at state h (K x V): Gamma = g_cum (n x V, chunk-local
// cumulative log-decay of the VALUE gate), V<- = V . e^Gamma, V-> = V . e^-Gamma,
// V_end = V . e^(Gamma_last - Gamma), Q~ = scale Q.
//   A0 = Diag(beta) (V<- V->^T . M_-1),  A = (I + A0)^-1          (the note's M_[t])
//   W = A Diag(beta) V<-,  U = A Diag(beta) K                       (UT transform)
//   K_new = U - W h^T                                               (the "pseudo"-key term)
//   h' = h Diag(e^Gamma_last) + K_new^T V_end                       (matrix form, transposed)
//   O = e^Gamma . (Q~ h) + sum_{i <= r} (q~_r . k_new_i) v_i . e^(Gamma_r - Gamma_i)   (VO-RoPE)
// The last sum is gla's ChunkDecay::grad_left of P = Q~ K_new^T . M against V, so every pair
// exp(Gamma_r - Gamma_i) is factored only where the exponent range of S allows.
#pragma once

#include <vector>

#include "../kda/chunk.hpp"
#include "../low_rank/chunk.hpp"

namespace ruleproof::gated_oja {

using namespace low_rank; // the stages shared with dplr (low_rank/chunk.hpp)

/// \brief `chunk_scaled_dot_vvt`: \f$ A_0 = \mathrm{Diag}(\beta) (V^{\leftarrow}
/// V^{\rightarrow\top} \odot M_{-1}) \f$ per chunk (KDA's chunk_scaled_dot_kkt on v).
template <Scalar S>
std::vector<Mat<S>> chunk_scaled_dot_vvt(const Mat<S> &v, const Vec<S> &beta, const Mat<S> &g_cum,
                                         std::size_t C) {
  return kda::chunk_scaled_dot_kkt(v, beta, g_cum, C); // seed 000: lower(Diag(beta) ...)
}

/// \brief `recompute_w_u`: the UT transform \f$ W = A\,\mathrm{Diag}(\beta) V^{\leftarrow} \f$
/// (L x V), \f$ U = A\,\mathrm{Diag}(\beta) K \f$ (L x K): KDA's with k and v exchanged.
template <Scalar S>
kda::WU<S> recompute_w_u(const Mat<S> &k, const Mat<S> &v, const Vec<S> &beta,
                         const std::vector<Mat<S>> &A, const Mat<S> &g_cum, std::size_t C) {
  return kda::recompute_w_u(v, k, beta, A, g_cum, C); // seed 000: W, U
}

/// The state recursion of one sequence.
template <class S> struct StateChain {
  std::vector<Mat<S>> h; ///< K x V state at each chunk start (h[0] = initial state)
  std::vector<Mat<S>> D; ///< V x V per chunk, the note's D^C = Diag(e^Gamma_last) - V_end^T W
  std::vector<Mat<S>> H; ///< K x V per chunk, U^T V_end (the note's H^C, transposed)
  Mat<S> k_new;          ///< L x K, \f$ U - W h^\top \f$ chunk by chunk (pseudo-keys)
  Mat<S> ht;             ///< K x V state after the last chunk
};

/// \brief `chunk_oja_fwd_h`: per chunk \f$ K_{new} = U - W h^\top \f$, then \f$ h' = h\,
/// \mathrm{Diag}(e^{\Gamma_{last}}) + K_{new}^\top V_{end} \f$; so \f$ h' = h D^\top + H \f$.
template <Scalar S>
StateChain<S> chunk_oja_fwd_h(const Mat<S> &v, const kda::WU<S> &wu, const Mat<S> &g_cum,
                              const Mat<S> &h0, std::size_t C) {
  StateChain<S> r{{}, {}, {}, Mat<S>(wu.u.rows(), wu.u.cols()), h0};
  for (const auto &[s, n] : shared::chunks_of(v.rows(), C)) {
    const Mat<S> gc = g_cum.middleRows(s, n);
    const Mat<S> v_end = v.middleRows(s, n).cwiseProduct(shared::decay_to_end(gc));
    const Vec<S> gamma = shared::decay_last(gc);
    const Mat<S> k_new = emulation::stored<S>(
        wu.u.middleRows(s, n) - shared::mul<S>(wu.w.middleRows(s, n), r.ht.transpose()));
    r.h.push_back(emulation::stored<S>(r.ht)); // kernels store h in 16 bits, carry it in fp32
    r.D.push_back(Mat<S>(gamma.asDiagonal()) -
                  shared::mul<S>(v_end.transpose(), wu.w.middleRows(s, n)));
    r.H.push_back(shared::mul<S>(wu.u.middleRows(s, n).transpose(), v_end));     // D^C, H^C
    r.ht = r.ht * gamma.asDiagonal() + shared::mul<S>(k_new.transpose(), v_end); // S_[t+1]
    r.k_new.middleRows(s, n) = k_new;
  }
  return r;
}

/// \brief `chunk_oja_fwd_o`, the VO-RoPE output: \f$ O = e^{\Gamma} \odot (\tilde Q h +
/// \mathrm{Tril}(\tilde Q K_{new}^\top) (V \odot e^{-\Gamma})) \f$ per chunk, the decay
/// pairs through ChunkDecay.
template <Scalar S>
Mat<S> chunk_oja_fwd_o(const Mat<S> &q, const Mat<S> &v, const StateChain<S> &chain,
                       const Mat<S> &g_cum, const S &scale, std::size_t C) {
  Mat<S> o(v.rows(), v.cols());
  const auto chunks = shared::chunks_of(v.rows(), C);
  for (std::size_t c = 0; c < chunks.size(); ++c) {
    const auto [s, n] = chunks[c];
    const Mat<S> qc = scale * q.middleRows(s, n), gc = g_cum.middleRows(s, n);
    const shared::ChunkDecay<S> decay(gc);
    const Mat<S> P = shared::lower(shared::mul<S>(qc, chain.k_new.middleRows(s, n).transpose()));
    o.middleRows(s, n) = shared::exp_of(gc).cwiseProduct(shared::mul<S>(qc, chain.h[c])) +
                         decay.grad_left(P, v.middleRows(s, n)); // seed 000: VO-RoPE O_[t]
  }
  return o;
}

/// \brief The stage intermediates of the chunkwise forward.
template <class S> struct ChunkStages {
  Mat<S> g_cum;           ///< L x V, chunk_local_cumsum of the value gate
  std::vector<Mat<S>> A0; ///< n x n per chunk, strictly lower: Diag(beta)(V<- V->^T . M_-1)
  std::vector<Mat<S>> A;  ///< n x n per chunk, unit lower: (I + A0)^-1, the note's M_[t]
  Mat<S> w;               ///< L x V, W = A Diag(beta) V<-
  Mat<S> u;               ///< L x K, U = A Diag(beta) K
  std::vector<Mat<S>> h;  ///< K x V state at each chunk start (h[0] = initial state)
  std::vector<Mat<S>> D;  ///< V x V per chunk
  std::vector<Mat<S>> H;  ///< K x V per chunk
  Mat<S> k_new;           ///< L x K, U - W h^T
};

template <class S> using ChunkForward = low_rank::ChunkForward<S, ChunkStages<S>>;

/// \brief One head, chunkwise (seed 000, section 1.3); any chunk size C >= 1.
template <Scalar S>
ChunkForward<S> chunk_forward_head(const Head<S> &x, const S &scale, std::size_t C) {
  ChunkForward<S> r;
  ChunkStages<S> &st = r.stages;
  st.g_cum = chunk_local_cumsum(x.g, C);
  st.A0 = chunk_scaled_dot_vvt(x.v, x.beta, st.g_cum, C);
  st.A = solve_tril(st.A0); // seed 000: M_[t]
  kda::WU<S> wu = recompute_w_u(x.k, x.v, x.beta, st.A, st.g_cum, C);
  StateChain<S> chain = chunk_oja_fwd_h(x.v, wu, st.g_cum, x.h0, C);
  r.out.o = chunk_oja_fwd_o(x.q, x.v, chain, st.g_cum, scale, C);
  r.out.ht = std::move(chain.ht);
  st.w = std::move(wu.w);
  st.u = std::move(wu.u);
  st.h = std::move(chain.h);
  st.D = std::move(chain.D);
  st.H = std::move(chain.H);
  st.k_new = std::move(chain.k_new);
  return r;
}

template <Scalar S> HeadOutput<S> chunk_head(const Head<S> &x, const S &scale, std::size_t C) {
  return chunk_forward_head(x, scale, C).out;
}

/// The backward state recursion of one sequence.
template <class S> struct StateGrads {
  std::vector<Mat<S>> dh; ///< K x V per chunk: gradient of the state after that chunk
  Mat<S> dk_new;          ///< L x K, the whole gradient of K_new
  Mat<S> dh0;             ///< gradient of the initial state
};

/// \brief `chunk_oja_bwd_dhu` (BACKWARD.md, step 1): chunks walked backwards from \f$ dh =
/// dS_T \f$; per chunk \f$ dP = (dO V^{\rightarrow\top} \ldots) \f$ (ChunkDecay::scores of
/// dO and V), \f$ dK_{new} = V_{end}\, dh^\top + dP^\top \tilde Q \f$, then the gradient of
/// the start state \f$ dh\,\mathrm{Diag}(e^{\Gamma_{last}}) + \tilde Q^\top (e^{\Gamma}
/// \odot dO) - dK_{new}^\top W \f$.
template <Scalar S>
StateGrads<S> chunk_oja_bwd_dhu(const Mat<S> &q, const Mat<S> &v, const ChunkStages<S> &st,
                                const Mat<S> &d_o, const Mat<S> &d_ht, const S &scale,
                                std::size_t C) {
  const auto chunks = shared::chunks_of(q.rows(), C);
  StateGrads<S> r{std::vector<Mat<S>>(chunks.size()), Mat<S>(q.rows(), q.cols()), d_ht};
  for (std::size_t c = chunks.size(); c-- > 0;) {
    const auto [s, n] = chunks[c];
    const Mat<S> gc = st.g_cum.middleRows(s, n), qc = scale * q.middleRows(s, n);
    const Mat<S> vc = v.middleRows(s, n), d_oc = d_o.middleRows(s, n);
    const shared::ChunkDecay<S> decay(gc);
    const Mat<S> dP = decay.scores(d_oc, vc); // lower, with its diagonal
    const Mat<S> v_end = vc.cwiseProduct(shared::decay_to_end(gc));
    r.dh[c] = emulation::stored<S>(r.dh0); // kernels store dh and dk_new in 16 bits
    const Mat<S> dk_new = emulation::stored<S>(shared::mul<S>(v_end, r.dh0.transpose()) +
                                               shared::mul<S>(dP.transpose(), qc));
    r.dh0 = r.dh0 * shared::decay_last(gc).asDiagonal() +
            shared::mul<S>(qc.transpose(), shared::exp_of(gc).cwiseProduct(d_oc)) -
            shared::mul<S>(dk_new.transpose(), st.w.middleRows(s, n));
    r.dk_new.middleRows(s, n) = dk_new;
  }
  return r;
}

/// \brief One head, chunkwise analytic backward of \f$ \langle dO, O\rangle + \langle dS_T,
/// S_T\rangle \f$ (BACKWARD.md): the state recursion (step 1), then per chunk the output
/// and state terms (step 2), the UT transform (step 3), the triangular solve and
/// \f$ A_0 \f$ (step 4), the gate from every explicit \f$ \Gamma \f$ (step 5) and the suffix
/// sum inside every chunk (step 6).
template <Scalar S>
HeadGrads<S> chunk_backward_head(const Head<S> &x, const HeadCotangent<S> &ct, const S &scale,
                                 std::size_t C) {
  const Eigen::Index L = x.q.rows(), K = x.q.cols(), V = x.v.cols();
  const ChunkForward<S> fwd = chunk_forward_head(x, scale, C);
  const ChunkStages<S> &st = fwd.stages;
  const StateGrads<S> dhu = chunk_oja_bwd_dhu(x.q, x.v, st, ct.d_o, ct.d_ht, scale, C); // step 1
  HeadGrads<S> d;
  d.dq = Mat<S>(L, K);
  d.dk = Mat<S>(L, K);
  d.dv = Mat<S>(L, V);
  d.dbeta = Vec<S>(L);
  Mat<S> dgamma(L, V);
  const auto chunks = shared::chunks_of(L, C);
  for (std::size_t c = 0; c < chunks.size(); ++c) {
    const auto [s, n] = chunks[c];
    const Mat<S> qc = scale * x.q.middleRows(s, n), kc = x.k.middleRows(s, n);
    const Mat<S> vc = x.v.middleRows(s, n), d_oc = ct.d_o.middleRows(s, n);
    const Mat<S> gc = st.g_cum.middleRows(s, n), oc = fwd.out.o.middleRows(s, n);
    const Mat<S> wc = st.w.middleRows(s, n), k_newc = st.k_new.middleRows(s, n);
    const Mat<S> dk_newc = dhu.dk_new.middleRows(s, n);
    const Vec<S> bc = x.beta.segment(s, n);
    const Mat<S> &h = st.h[c], &dh = dhu.dh[c], &a = st.A[c];
    const shared::ChunkDecay<S> decay(gc);
    const Mat<S> up = shared::exp_of(gc), to_end = shared::decay_to_end(gc);
    const Mat<S> v_end = vc.cwiseProduct(to_end), v_left = vc.cwiseProduct(up); // V_end, V<-
    const Mat<S> P = shared::lower(shared::mul<S>(qc, k_newc.transpose()));
    const Mat<S> dP = decay.scores(d_oc, vc);
    // step 2: output and state terms
    const Mat<S> dq_tilde =
        shared::mul<S>(up.cwiseProduct(d_oc), h.transpose()) + shared::mul<S>(dP, k_newc);
    const Mat<S> dv_end = shared::mul<S>(k_newc, dh);
    const Mat<S> dv_intra = decay.grad_right(P, d_oc);
    const Mat<S> dw = -shared::mul<S>(dk_newc, h); // K_new = U - W h^T
    // step 3: the UT transform, W = A Diag(beta) V<-, U = A Diag(beta) K
    const Mat<S> at_dw = shared::mul<S>(a.transpose(), dw);
    const Mat<S> at_du = shared::mul<S>(a.transpose(), dk_newc);
    const Mat<S> dA = shared::mul<S>(dw, Mat<S>(bc.asDiagonal() * v_left).transpose()) +
                      shared::mul<S>(dk_newc, Mat<S>(bc.asDiagonal() * kc).transpose());
    const Mat<S> dv_left = bc.asDiagonal() * at_dw;
    // step 4: A = (I + A0)^-1, A0 = Diag(beta) X, X = V<- V->^T . M_-1
    const Mat<S> dA0 = shared::strictly_lower(
        Mat<S>(-shared::mul<S>(shared::mul<S>(a.transpose(), dA), a.transpose())));
    const Mat<S> X = shared::strictly_lower(decay.scores(vc, vc));
    const Mat<S> dX = bc.asDiagonal() * dA0;
    const Mat<S> dv_x_left = decay.grad_left(dX, vc), dv_x_right = decay.grad_right(dX, vc);
    d.dq.middleRows(s, n) = scale * dq_tilde;
    d.dk.middleRows(s, n) = bc.asDiagonal() * at_du;
    d.dv.middleRows(s, n) =
        to_end.cwiseProduct(dv_end) + dv_intra + up.cwiseProduct(dv_left) + dv_x_left + dv_x_right;
    d.dbeta.segment(s, n) = at_dw.cwiseProduct(v_left).rowwise().sum() +
                            at_du.cwiseProduct(kc).rowwise().sum() +
                            dA0.cwiseProduct(X).rowwise().sum();
    // step 5: the gate, from every place Gamma appears
    Mat<S> dgc = oc.cwiseProduct(d_oc) - vc.cwiseProduct(dv_intra) - v_end.cwiseProduct(dv_end) +
                 v_left.cwiseProduct(dv_left) + vc.cwiseProduct(dv_x_left) -
                 vc.cwiseProduct(dv_x_right);
    dgc.row(n - 1) += (h * shared::decay_last(gc).asDiagonal()).cwiseProduct(dh).colwise().sum() +
                      v_end.cwiseProduct(dv_end).colwise().sum();
    dgamma.middleRows(s, n) = dgc;
  }
  d.dg = chunk_local_cumsum_reverse(dgamma, C); // step 6
  d.dh0 = dhu.dh0;
  return d;
}

template <Scalar S> double chunk_condition(const Head<S> &x, const S &scale, std::size_t C) {
  const auto st = chunk_forward_head(x, scale, C).stages;
  double kappa = 1;
  for (std::size_t i = 0; i < st.A.size(); ++i)
    kappa = std::max(kappa, shared::condition_inf(st.A0[i], st.A[i]));
  return kappa;
}

} // namespace ruleproof::gated_oja
