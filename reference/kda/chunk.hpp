// ruleproof: KDA (and through it Gated DeltaNet and the delta rule), chunkwise form and its
// analytic backward, stage by stage as seed 003 lays them out and as flash-linear-attention
// names them: chunk_local_cumsum, chunk_scaled_dot_kkt (A0), solve_tril (A), recompute_w_u
// (w, u), the three run as one kernel in chunk_wy_fwd, chunk_delta_fwd_h (h, v_new),
// chunk_fwd_o; backward chunk_bwd_dv_local, chunk_bwd_dhu, chunk_bwd_dqkwg, chunk_wy_bwd
// (flash-linear-attention's prepare_wy_repr_bwd). Seed 003 writes them for a scalar gate; here the
// gate is per key (L x K), every decay factor exp(g_cum_i - g_cum_j) going through the shared
// ChunkDecay, which factors it only where the exponent range of S allows, row by row. Where seed
// 003 and the recurrence disagree, this code follows the recurrence (the comments say where).
//
// Each chunk's exp values are computed once (ChunkGate) and shared by the stages, forward and
// backward; the matrix products go through shared/products.hpp (exact-significand dot products
// for float128, triangular terms skipped), and the triangular solve is a forward substitution
// with the same dot products.
//
// Notation, per chunk of n rows starting at state h (K x V): Gamma = g_cum (n x K, local
// cumulative log-decay), K< = K . e^Gamma, K> = K . e^-Gamma, Q~ = scale Q.
#pragma once

#include <deque>
#include <vector>

#include "../core/heads.hpp"
#include "../shared/chunk.hpp"

namespace ruleproof::kda {

using shared::chunk_local_cumsum;
using shared::chunk_local_cumsum_reverse;
using shared::solve_tril;

namespace detail {
using namespace shared;

/// \brief One chunk, rows [s, s + n), and its gate: every exp value the stages use, computed
/// once, and the three bilinear maps of the decay \f$ R_{ijc} = e^{\Gamma_{ic} - \Gamma_{jc}} \f$
/// (i >= j) that the shared ChunkDecay builds on them. With one gate per row (Gated DeltaNet, the
/// delta rule: every key decays alike) \f$ R_{ijc} = R_{ij} \f$: the decay is taken on one
/// column (2n exp calls, not 2nK), and the maps are products with \f$ R \odot dA \f$.
template <class S> class ChunkGate {
public:
  Eigen::Index s, n;

  ChunkGate(const Mat<S> &g_cum, const ChunkRange &r, bool per_row)
      : s(r.begin), n(r.size),
        g_cum_(per_row ? Mat<S>(g_cum.block(s, 0, n, 1)) : Mat<S>(g_cum.middleRows(s, n))),
        decay_(g_cum_) {
    const Eigen::Index K = g_cum.cols();
    const Mat<S> to_end = chunk_decay_to_end(decay_, g_cum_);
    up_ = decay_.up().replicate(1, per_row ? K : 1);
    to_end_ = to_end.replicate(1, per_row ? K : 1);
    last_ = up_.row(n - 1).transpose();
    if (per_row) { // R_ij = 1 . 1 . e^{Gamma_i - Gamma_j}
      const Mat<S> ones = Mat<S>::Ones(n, 1);
      R_ = decay_.scores(ones, ones);
    }
  }
  ChunkGate(const ChunkGate &) = delete; // the decay refers to g_cum_: the gate stays put
  ChunkGate &operator=(const ChunkGate &) = delete;

  const Mat<S> &up() const { return up_; }         ///< n x K, e^Gamma
  const Mat<S> &to_end() const { return to_end_; } ///< n x K, e^{Gamma_last - Gamma}
  const Vec<S> &last() const { return last_; }     ///< K, e^{Gamma_last}

  /// \f$ A_{ij} = \sum_c X_{ic} Y_{jc} R_{ijc} \f$ for i >= j, zero above the diagonal.
  Mat<S> scores(const Mat<S> &X, const Mat<S> &Y) const {
    if (!per_row())
      return decay_.scores(X, Y);
    return R_.cwiseProduct(product<S>(X, false, Y, true, Structure::lower_result));
  }
  /// \f$ \partial X_{ic} = \sum_{j \le i} dA_{ij} Y_{jc} R_{ijc} \f$
  Mat<S> grad_left(const Mat<S> &dA, const Mat<S> &Y) const {
    if (!per_row())
      return decay_.grad_left(dA, Y);
    return product<S>(Mat<S>(R_.cwiseProduct(dA)), false, Y, false, Structure::left_lower);
  }
  /// \f$ \partial Y_{jc} = \sum_{i \ge j} dA_{ij} X_{ic} R_{ijc} \f$
  Mat<S> grad_right(const Mat<S> &dA, const Mat<S> &X) const {
    if (!per_row())
      return decay_.grad_right(dA, X);
    return product<S>(Mat<S>(R_.cwiseProduct(dA)), true, X, false, Structure::left_upper);
  }

private:
  bool per_row() const { return R_.size() > 0; }
  Mat<S> g_cum_;        // n x K, Gamma; n x 1 when per row
  ChunkDecay<S> decay_; // refers to g_cum_
  Mat<S> up_, to_end_;
  Vec<S> last_;
  Mat<S> R_; // n x n, lower: R_ij, when per row
};

/// Every chunk's gate, in order (a deque: each gate stays where it was built). per_row: one
/// gate per row, the same for every key (column 0 is read).
template <class S> using ChunkGates = std::deque<ChunkGate<S>>;

template <Scalar S>
ChunkGates<S> chunk_gates(const Mat<S> &g_cum, std::size_t C, bool per_row = false) {
  ChunkGates<S> gates;
  for (const ChunkRange &r : chunks_of(g_cum.rows(), C))
    gates.emplace_back(g_cum, r, per_row && g_cum.cols() > 0);
  return gates;
}

} // namespace detail

/// \brief `chunk_scaled_dot_kkt`: \f$ A_0 = \mathrm{Diag}(\beta) (K^{\leftarrow}
/// K^{\rightarrow\top} \odot M_{-1}) \f$ per chunk, n x n, strictly lower triangular.
template <Scalar S>
std::vector<Mat<S>> chunk_scaled_dot_kkt(const Mat<S> &k, const Vec<S> &beta,
                                         const detail::ChunkGates<S> &gates) {
  std::vector<Mat<S>> A0;
  for (const detail::ChunkGate<S> &gate : gates) {
    const Mat<S> kc = k.middleRows(gate.s, gate.n);
    const Mat<S> kkt = shared::strictly_lower(gate.scores(kc, kc));
    A0.push_back(beta.segment(gate.s, gate.n).asDiagonal() * kkt); // seed 003, forward step 2
  }
  return A0;
}

template <Scalar S>
std::vector<Mat<S>> chunk_scaled_dot_kkt(const Mat<S> &k, const Vec<S> &beta, const Mat<S> &g_cum,
                                         std::size_t C) {
  return chunk_scaled_dot_kkt(k, beta, detail::chunk_gates(g_cum, C));
}

/// The WY (UT) representation of one sequence: L x K and L x V, chunk after chunk.
template <class S> struct WU {
  Mat<S> w; ///< \f$ \overleftarrow{W} = A\,\mathrm{Diag}(\beta) (K \odot e^{\Gamma}) \f$
  Mat<S> u; ///< \f$ U = A\,\mathrm{Diag}(\beta) V \f$
};

/// \brief `recompute_w_u`: \f$ U = A\,\mathrm{Diag}(\beta) V \f$ and
/// \f$ \overleftarrow{W} = A\,\mathrm{Diag}(\beta) (K \odot e^{\Gamma}) \f$ per chunk, A
/// unit lower triangular.
template <Scalar S>
WU<S> recompute_w_u(const Mat<S> &k, const Mat<S> &v, const Vec<S> &beta,
                    const std::vector<Mat<S>> &A, const detail::ChunkGates<S> &gates) {
  using shared::product;
  using shared::Structure;
  WU<S> r{Mat<S>(k.rows(), k.cols()), Mat<S>(v.rows(), v.cols())};
  for (std::size_t c = 0; c < gates.size(); ++c) {
    const Eigen::Index s = gates[c].s, n = gates[c].n;
    const Vec<S> b = beta.segment(s, n);
    const Mat<S> bv = b.asDiagonal() * v.middleRows(s, n);
    const Mat<S> bk =
        b.asDiagonal() * k.middleRows(s, n).cwiseProduct(gates[c].up()); // Diag(beta) K<
    r.u.middleRows(s, n) = product<S>(A[c], false, bv, false, Structure::left_lower); // step 3
    r.w.middleRows(s, n) = product<S>(A[c], false, bk, false, Structure::left_lower); // step 3
  }
  emulation::store<S>(r.u); // kernels store w and u in 16 bits
  emulation::store<S>(r.w);
  return r;
}

template <Scalar S>
WU<S> recompute_w_u(const Mat<S> &k, const Mat<S> &v, const Vec<S> &beta,
                    const std::vector<Mat<S>> &A, const Mat<S> &g_cum, std::size_t C) {
  return recompute_w_u(k, v, beta, A, detail::chunk_gates(g_cum, C));
}

/// The state recursion of one sequence.
/// \brief `chunk_wy_fwd`: chunk_scaled_dot_kkt, solve_tril and recompute_w_u of every chunk, as
/// one kernel runs them: A0, A = (I + A0)^-1 and the WY representation w, u.
template <class S> struct WYForward {
  std::vector<Mat<S>> A0, A;
  WU<S> wu;
};
template <Scalar S>
WYForward<S> chunk_wy_fwd(const Mat<S> &k, const Mat<S> &v, const Vec<S> &beta,
                          const detail::ChunkGates<S> &gates) {
  WYForward<S> r;
  r.A0 = chunk_scaled_dot_kkt(k, beta, gates);  // seed 003, forward step 2
  r.A = solve_tril(r.A0);                       // seed 003, forward step 2
  r.wu = recompute_w_u(k, v, beta, r.A, gates); // seed 003, forward step 3
  return r;
}

template <class S> struct StateChain {
  std::vector<Mat<S>> h; ///< K x V state at each chunk start (h[0] = initial state)
  Mat<S> v_new;          ///< L x V, \f$ U - \overleftarrow{W} h \f$ chunk by chunk
  Mat<S> ht;             ///< K x V state after the last chunk
};

/// \brief `chunk_delta_fwd_h`: per chunk \f$ V_{new} = U - \overleftarrow{W} h \f$, then
/// \f$ h' = \mathrm{Diag}(e^{\Gamma_{last}}) h + (K \odot e^{\Gamma_{last} - \Gamma})^\top
/// V_{new} \f$ (seed 003 step 4 writes the first factor as \f$ \gamma^C \f$, the log itself;
/// the recurrence needs its exponential).
template <Scalar S>
StateChain<S> chunk_delta_fwd_h(const Mat<S> &k, const WU<S> &wu,
                                const detail::ChunkGates<S> &gates, const Mat<S> &h0) {
  using shared::product;
  StateChain<S> r{{}, Mat<S>(wu.u.rows(), wu.u.cols()), h0};
  for (const detail::ChunkGate<S> &gate : gates) {
    const Eigen::Index s = gate.s, n = gate.n;
    r.h.push_back(emulation::stored<S>(r.ht)); // kernels store h in 16 bits, carry it in fp32
    const Mat<S> v_new = emulation::stored<S>(
        wu.u.middleRows(s, n) - product<S>(wu.w.middleRows(s, n), false, r.ht, false)); // step 4
    const Mat<S> k_to_end = k.middleRows(s, n).cwiseProduct(gate.to_end());
    r.ht = gate.last().asDiagonal() * r.ht + product<S>(k_to_end, true, v_new, false); // step 4
    r.v_new.middleRows(s, n) = v_new;
  }
  return r;
}

/// \brief `chunk_fwd_o`: \f$ O = (\tilde Q \odot e^{\Gamma}) h + (\tilde Q^{\leftarrow}
/// K^{\rightarrow\top} \odot M) V_{new} \f$ per chunk, M the causal mask with its diagonal.
template <Scalar S>
Mat<S> chunk_fwd_o(const Mat<S> &q, const Mat<S> &k, const Mat<S> &v_new,
                   const std::vector<Mat<S>> &h, const detail::ChunkGates<S> &gates,
                   const S &scale) {
  using shared::product;
  using shared::Structure;
  Mat<S> o(v_new.rows(), v_new.cols());
  for (std::size_t c = 0; c < gates.size(); ++c) {
    const detail::ChunkGate<S> &gate = gates[c];
    const Eigen::Index s = gate.s, n = gate.n;
    const Mat<S> qc = scale * q.middleRows(s, n), kc = k.middleRows(s, n);
    const Mat<S> q_decayed = qc.cwiseProduct(gate.up());
    o.middleRows(s, n) = product<S>(q_decayed, false, h[c], false) +
                         product<S>(gate.scores(qc, kc), false, v_new.middleRows(s, n), false,
                                    Structure::left_lower); // seed 003, step 5
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

namespace detail {

/// The forward with what the backward needs again: every chunk's gate (its exps).
template <class S> struct ChunkPass {
  ChunkForward<S> fwd;
  ChunkGates<S> gates;
};

/// Whether a gate of this kind is one value per row, repeated over the keys (as_kda makes
/// Gated DeltaNet's and the delta rule's so): then every decay is taken per row.
inline bool per_row(GateKind gate) { return gate == GateKind::scalar || gate == GateKind::none; }

/// Seed 003 forward steps 1-5 (step 5, the output, when asked).
template <Scalar S>
void chunk_forward_pass(const Head<S> &x, const S &scale, std::size_t C, GateKind gate,
                        bool with_output, ChunkPass<S> &p) {
  ChunkStages<S> &st = p.fwd.stages;
  st.g_cum = chunk_local_cumsum(x.g, C); // seed 003, forward step 1
  p.gates = chunk_gates(st.g_cum, C, per_row(gate));
  WYForward<S> wy = chunk_wy_fwd(x.k, x.v, x.beta, p.gates); // seed 003, forward steps 2-3
  st.A0 = std::move(wy.A0);
  st.A = std::move(wy.A);
  WU<S> &wu = wy.wu;
  StateChain<S> chain = chunk_delta_fwd_h(x.k, wu, p.gates, x.h0); // seed 003, forward step 4
  if (with_output)                                                 // seed 003, forward step 5
    p.fwd.out.o = chunk_fwd_o(x.q, x.k, chain.v_new, chain.h, p.gates, scale);
  p.fwd.out.ht = std::move(chain.ht);
  st.w = std::move(wu.w);
  st.u = std::move(wu.u);
  st.h = std::move(chain.h);
  st.v_new = std::move(chain.v_new);
}

} // namespace detail

/// \brief One head, chunkwise, seed 003 forward steps 1-5; any chunk size C >= 1. gate: key
/// for a gate per key; scalar or none when every row's gate is the same for every key.
template <Scalar S>
ChunkForward<S> chunk_forward_head(const Head<S> &x, const S &scale, std::size_t C,
                                   GateKind gate = GateKind::key) {
  detail::ChunkPass<S> p;
  detail::chunk_forward_pass(x, scale, C, gate, true, p);
  return std::move(p.fwd);
}

template <Scalar S>
HeadOutput<S> chunk_head(const Head<S> &x, const S &scale, std::size_t C,
                         GateKind gate = GateKind::key) {
  return chunk_forward_head(x, scale, C, gate).out;
}

/// \brief `chunk_bwd_dv_local`: \f$ dV_{new}|_O = (\tilde Q^{\leftarrow} K^{\rightarrow\top}
/// \odot M)^\top dO \f$ per chunk.
template <Scalar S>
Mat<S> chunk_bwd_dv_local(const Mat<S> &q, const Mat<S> &k, const detail::ChunkGates<S> &gates,
                          const Mat<S> &d_o, const S &scale) {
  using shared::product;
  using shared::Structure;
  Mat<S> dv(d_o.rows(), d_o.cols());
  for (const detail::ChunkGate<S> &gate : gates) {
    const Eigen::Index s = gate.s, n = gate.n;
    const Mat<S> qc = scale * q.middleRows(s, n), kc = k.middleRows(s, n);
    dv.middleRows(s, n) = product<S>(gate.scores(qc, kc), true, d_o.middleRows(s, n), false,
                                     Structure::left_upper); // seed 003, backward step 3
  }
  emulation::store<S>(dv); // kernels store it in 16 bits
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
StateGrads<S> chunk_bwd_dhu(const Mat<S> &q, const Mat<S> &k, const Mat<S> &w,
                            const detail::ChunkGates<S> &gates, const Mat<S> &d_o,
                            const Mat<S> &d_ht, const Mat<S> &dv_local, const S &scale) {
  using shared::product;
  StateGrads<S> r{std::vector<Mat<S>>(gates.size()), dv_local, d_ht};
  for (std::size_t c = gates.size(); c-- > 0;) {
    const detail::ChunkGate<S> &gate = gates[c];
    const Eigen::Index s = gate.s, n = gate.n;
    const Mat<S> k_to_end = k.middleRows(s, n).cwiseProduct(gate.to_end());
    const Mat<S> q_decayed = (scale * q.middleRows(s, n)).cwiseProduct(gate.up());
    r.dh[c] = emulation::stored<S>(r.dh0); // kernels store dh and dv2 in 16 bits
    r.dv.middleRows(s, n) += product<S>(k_to_end, false, r.dh0, false); // seed 003, step 4
    emulation::store<S>(r.dv.middleRows(s, n));
    r.dh0 = gate.last().asDiagonal() * r.dh0 +
            product<S>(q_decayed, true, d_o.middleRows(s, n), false) -
            product<S>(w.middleRows(s, n), true, r.dv.middleRows(s, n), false); // step 4
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
                            const detail::ChunkGates<S> &gates, const std::vector<Mat<S>> &h,
                            const std::vector<Mat<S>> &dh, const Mat<S> &d_o, const Mat<S> &dv,
                            const S &scale) {
  using shared::product;
  using shared::Structure;
  const Eigen::Index L = q.rows(), K = q.cols();
  QKWGrads<S> r{Mat<S>(L, K), Mat<S>(L, K), Mat<S>(L, K), Mat<S>(L, K)};
  for (std::size_t c = 0; c < gates.size(); ++c) {
    const detail::ChunkGate<S> &gate = gates[c];
    const Eigen::Index s = gate.s, n = gate.n;
    const Mat<S> qc = scale * q.middleRows(s, n), kc = k.middleRows(s, n);
    const Mat<S> d_oc = d_o.middleRows(s, n), v_newc = v_new.middleRows(s, n);
    // dB's diagonal apart: its terms dB_ii k_i of dq~ and dB_ii q~_i of dk (no decay) cancel
    // in dgamma exactly and are left out of it
    const Mat<S> dB = product<S>(d_oc, false, v_newc, true, Structure::lower_result); // step 5
    const Vec<S> dB_diagonal = dB.diagonal();
    const Mat<S> dB_strict = dB.template triangularView<Eigen::StrictlyLower>();
    const Mat<S> dq_tilde = gate.up().cwiseProduct(product<S>(d_oc, false, h[c], true)) +
                            gate.grad_left(dB_strict, kc); // seed 003, backward step 5
    const Mat<S> dk_o = gate.grad_right(dB_strict, qc);
    const Mat<S> dk_s = gate.to_end().cwiseProduct(product<S>(v_newc, false, dh[c], true));
    const Mat<S> k_dk_s = kc.cwiseProduct(dk_s);
    Mat<S> dgamma = qc.cwiseProduct(dq_tilde) - kc.cwiseProduct(dk_o) - k_dk_s;
    dgamma.row(n - 1) += (gate.last().cwiseProduct(shared::row_dots(h[c], dh[c])) +
                          k_dk_s.colwise().sum().transpose())
                             .transpose(); // seed 003, step 5: d gamma^C
    r.dq.middleRows(s, n) = scale * (dq_tilde + dB_diagonal.asDiagonal() * kc);
    r.dk.middleRows(s, n) = dk_o + dB_diagonal.asDiagonal() * qc + dk_s;
    r.dw.middleRows(s, n) = -product<S>(dv.middleRows(s, n), false, h[c], true);
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

/// \brief `chunk_wy_bwd` (flash-linear-attention's `prepare_wy_repr_bwd`), per chunk: \f$ dA = dU
/// (\mathrm{Diag}(\beta) V)^\top + dW
/// (\mathrm{Diag}(\beta) K^{\leftarrow})^\top \f$, \f$ dV = \mathrm{Diag}(\beta) A^\top dU \f$,
/// \f$ dK^{\leftarrow} = \mathrm{Diag}(\beta) A^\top dW \f$, \f$ dA_0 = -(A^\top dA A^\top)
/// \odot M_{-1} \f$, then through \f$ A_0 = \mathrm{Diag}(\beta) X \f$, \f$ X = K^{\leftarrow}
/// K^{\rightarrow\top} \odot M_{-1} \f$ with \f$ dX = \mathrm{Diag}(\beta) dA_0 \f$. A being
/// lower triangular, only the strictly lower part of dA reaches \f$ dA_0 \f$.
template <Scalar S>
WYGrads<S> chunk_wy_bwd(const Mat<S> &k, const Mat<S> &v, const Vec<S> &beta,
                        const detail::ChunkGates<S> &gates, const std::vector<Mat<S>> &A,
                        const Mat<S> &dw, const Mat<S> &du) {
  using shared::product;
  using shared::row_dots;
  using shared::Structure;
  const Eigen::Index L = k.rows(), K = k.cols();
  WYGrads<S> r{Mat<S>(L, K), Mat<S>(L, v.cols()), Vec<S>(L), Mat<S>(L, K)};
  for (std::size_t c = 0; c < gates.size(); ++c) {
    const detail::ChunkGate<S> &gate = gates[c];
    const Eigen::Index s = gate.s, n = gate.n;
    const Mat<S> kc = k.middleRows(s, n), vc = v.middleRows(s, n);
    const Mat<S> dwc = dw.middleRows(s, n), duc = du.middleRows(s, n);
    const Vec<S> bc = beta.segment(s, n);
    const auto b = bc.asDiagonal(); // Diag(beta)
    const Mat<S> &a = A[c];
    const Mat<S> k_decayed = kc.cwiseProduct(gate.up()); // K<
    const Mat<S> bv = b * vc, bk = b * k_decayed;
    const Mat<S> at_du = product<S>(a, true, duc, false, Structure::left_upper);
    const Mat<S> at_dw = product<S>(a, true, dwc, false, Structure::left_upper);
    const Mat<S> dA = product<S>(duc, false, bv, true, Structure::lower_result) +
                      product<S>(dwc, false, bk, true, Structure::lower_result); // step 6
    const Mat<S> at_dA = product<S>(a, true, dA, false, Structure::left_upper);
    const Mat<S> dA0 = -shared::strictly_lower(
        product<S>(at_dA, false, a, true, Structure::right_upper)); // -(A^T dA A^T) . M_-1
    const Mat<S> X = shared::strictly_lower(gate.scores(kc, kc));
    const Mat<S> dX = b * dA0;
    const Mat<S> dk_left = gate.grad_left(dX, kc), dk_right = gate.grad_right(dX, kc);
    const Mat<S> dk_decayed = b * at_dw;
    r.dv.middleRows(s, n) = b * at_du; // seed 003, backward step 6
    r.dk.middleRows(s, n) = gate.up().cwiseProduct(dk_decayed) + dk_left + dk_right;
    r.dbeta.segment(s, n) = row_dots(at_du, vc) + row_dots(at_dw, k_decayed) +
                            row_dots(dA0, X); // seed 003, backward step 6
    r.dg.middleRows(s, n) = k_decayed.cwiseProduct(dk_decayed) + kc.cwiseProduct(dk_left) -
                            kc.cwiseProduct(dk_right); // seed 003, backward step 6
  }
  return r;
}

/// \brief One head, chunkwise analytic backward of \f$ \langle dO, O\rangle + \langle dS_T,
/// S_T\rangle \f$, seed 003 backward steps 1-7: recompute the forward stages (steps 1-2, the
/// output left out), dv_local (3), the backward state recursion (4), dq, dk, dw and the gate
/// through the output and the state (5), through the WY representation (6), then the suffix
/// sum that turns the gradient of g_cum into that of g (7).
template <Scalar S>
HeadGrads<S> chunk_backward_head(const Head<S> &x, const HeadCotangent<S> &ct, const S &scale,
                                 std::size_t C, GateKind gate = GateKind::key) {
  detail::ChunkPass<S> p;
  detail::chunk_forward_pass(x, scale, C, gate, false, p); // seed 003, backward steps 1-2
  const ChunkStages<S> &st = p.fwd.stages;
  const Mat<S> dv_local = chunk_bwd_dv_local(x.q, x.k, p.gates, ct.d_o, scale); // step 3
  const StateGrads<S> dhu =
      chunk_bwd_dhu(x.q, x.k, st.w, p.gates, ct.d_o, ct.d_ht, dv_local, scale); // step 4
  const QKWGrads<S> qkw = chunk_bwd_dqkwg(x.q, x.k, st.v_new, p.gates, st.h, dhu.dh, ct.d_o, dhu.dv,
                                          scale); // seed 003, backward step 5
  const WYGrads<S> wy = chunk_wy_bwd(x.k, x.v, x.beta, p.gates, st.A, qkw.dw, dhu.dv); // step 6
  HeadGrads<S> d;
  d.dq = qkw.dq;
  d.dk = qkw.dk + wy.dk;
  d.dv = wy.dv;
  d.dg = chunk_local_cumsum_reverse(Mat<S>(qkw.dg + wy.dg), C); // seed 003, backward step 7
  d.dbeta = wy.dbeta;
  d.dh0 = dhu.dh0;
  return d;
}

template <Scalar S> double chunk_condition(const Head<S> &x, const S &scale, std::size_t C) {
  const ChunkForward<S> f = chunk_forward_head(x, scale, C);
  double kappa = 1;
  for (std::size_t i = 0; i < f.stages.A.size(); ++i)
    kappa = std::max(kappa, shared::condition_inf(f.stages.A0[i], f.stages.A[i]));
  return kappa;
}

} // namespace ruleproof::kda
