// ruleproof: what the claims of seed 001 (diagonal plus low rank) share: one drawn head of
// the note's gated DPLR, the reference's truth (its recurrence, its chunkwise stages, exact
// gradients by dual numbers), one chunk's quantities and the note's formulas in its layout.
//
// Layout: the note keeps S in R^{d_v x d_k} with o_t = S_t q_t; the reference keeps its
// transpose in R^{K x V} with o_t = S_t^T q_t. Every state here is in the note's layout (the
// reference's transposed where it is read); matrices of rows (Q, K, A, B, V, W, C, O) are the
// same in both. The scale is 1 throughout.
#pragma once

#include <utility>
#include <vector>

#include "common.hpp"
#include "reference/dplr/dplr.hpp"

namespace ruleproof::proofs::notes::seed001 {

using dplr::Parameterisation;
using ChunkRange = shared::ChunkRange;

/// \brief One drawn head of the note's gated DPLR and the cotangents of the loss
/// <dO, O> + <dS_T, S_T>.
template <class S> struct Dplr {
  Head<S> x;   ///< q, k, a, b, g (L x K), v (L x V), h0 (reference layout, zero unless drawn)
  Mat<S> d_o;  ///< L x V
  Mat<S> d_ht; ///< K x V, the reference's layout
  std::size_t C = 1;
  std::vector<ChunkRange> chunks;
};

template <class S> std::vector<ChunkRange> chunks_of(const Head<S> &x, std::size_t C) {
  return shared::chunks_of(x.q.rows(), C);
}

template <class S> Dplr<S> draw_dplr(Draw<S> &d, bool with_h0 = false) {
  const std::size_t T = d.sizes.T, K = d.sizes.K, V = d.sizes.V;
  Dplr<S> p;
  p.x = draw_head(d, K, false, with_h0);
  p.x.a = d.values(T, K);
  p.x.b = d.values(T, K);
  p.d_o = d.values(T, V);
  p.d_ht = d.values(K, V);
  p.C = d.sizes.C;
  p.chunks = chunks_of(p.x, p.C);
  return p;
}

/// Rows [begin, begin + count) of a head, starting from the state h0 (reference layout).
template <class S>
Head<S> rows_of(const Head<S> &x, Eigen::Index begin, Eigen::Index count, const Mat<S> &h0) {
  Head<S> y;
  y.q = x.q.middleRows(begin, count), y.k = x.k.middleRows(begin, count);
  y.v = x.v.middleRows(begin, count), y.g = x.g.middleRows(begin, count);
  y.a = x.a.middleRows(begin, count), y.b = x.b.middleRows(begin, count);
  if (x.beta.size() > 0)
    y.beta = x.beta.segment(begin, count);
  y.h0 = h0;
  return y;
}

/// A matrix as one column: parts of different shapes stacked into one side.
template <class S> Mat<S> flat(const Mat<S> &m) {
  return Eigen::Map<const Mat<S>>(m.data(), m.size(), 1);
}
template <class S>
Sides<S> flat_sides(const std::vector<Mat<S>> &lhs, const std::vector<Mat<S>> &rhs) {
  std::vector<Mat<S>> l, r;
  for (const Mat<S> &m : lhs)
    l.push_back(flat(m));
  for (const Mat<S> &m : rhs)
    r.push_back(flat(m));
  return sides_of(l, r);
}

template <class S> Mat<S> diag(const Mat<S> &row) {
  const Vec<S> v = row.transpose();
  return Mat<S>(v.asDiagonal());
}
template <class S> Mat<S> identity(Eigen::Index n) { return Mat<S>::Identity(n, n); }
/// The note's X^-1, by Gauss-Jordan elimination without pivoting: every X inverted here is
/// unit lower triangular at the drawn point (a dual perturbation aside), so no pivot vanishes
/// and no pivot search inflates the degree the exact arithmetic tracks.
template <class S> Mat<S> inverse(const Mat<S> &X) {
  Mat<S> x = X, inv = identity<S>(X.rows());
  for (Eigen::Index j = 0; j < x.rows(); ++j) {
    const S pivot = x(j, j);
    x.row(j) /= pivot, inv.row(j) /= pivot;
    for (Eigen::Index i = 0; i < x.rows(); ++i)
      if (i != j) {
        const S factor = x(i, j);
        x.row(i) -= factor * x.row(j), inv.row(i) -= factor * inv.row(j);
      }
  }
  return inv;
}
/// (X Y^T) . mask: the note's masked score matrices.
template <class S> Mat<S> scores(const Mat<S> &X, const Mat<S> &Y, const Mat<S> &mask) {
  return Mat<S>(X * Y.transpose()).cwiseProduct(mask);
}

/// One step's transition of the note, Diag(alpha_j)(I - b_j a_j^T), row j of the head.
template <class S> Mat<S> transition(const Head<S> &x, Eigen::Index j) {
  const Mat<S> alpha = exp_of(Mat<S>(x.g.row(j)));
  return diag(alpha) * (identity<S>(x.k.cols()) - x.b.row(j).transpose() * x.a.row(j));
}

/// \brief The note's recurrence in its layout, S_t = S_{t-1} Diag(alpha_t)(I - b_t a_t^T) +
/// v_t k_t^T from S_0 = h0^T, and o_t = S_t q_t.
template <class S> struct NoteRun {
  std::vector<Mat<S>> states; ///< S_1 ... S_L, d_v x d_k
  Mat<S> o;                   ///< L x d_v
};
template <class S> NoteRun<S> note_recurrence(const Head<S> &x) {
  NoteRun<S> r;
  r.o = Mat<S>(x.q.rows(), x.v.cols());
  Mat<S> state = x.h0.transpose();
  for (Eigen::Index t = 0; t < x.q.rows(); ++t) {
    state = Mat<S>(state * transition(x, t) + x.v.row(t).transpose() * x.k.row(t));
    r.states.push_back(state);
    r.o.row(t) = (state * x.q.row(t).transpose()).transpose();
  }
  return r;
}

/// The reference's recurrence in one of the three parameterisations, scale 1.
template <class S> HeadOutput<S> recurrence(const Head<S> &x, Parameterisation param) {
  return dplr::recurrent_head(x, S(1), param);
}

/// \brief The reference's truth for one draw: the chunkwise stages (F, E, w, c, v2, P, H) and
/// the recurrence's states (the note's layout) and output.
template <class S> struct Truth {
  dplr::ChunkStages<S> st;
  std::vector<Mat<S>> states; ///< S_1 ... S_L, the note's layout
  Mat<S> o;
  Mat<S> initial; ///< S_0 = h0^T

  explicit Truth(const Dplr<S> &p, Parameterisation param = Parameterisation::seed) {
    st = dplr::chunk_forward_head(dplr::as_core(p.x, param), S(1), p.C).stages;
    o = recurrence(p.x, param).o;
    for (Eigen::Index t = 1; t <= p.x.q.rows(); ++t)
      states.push_back(recurrence(rows_of(p.x, 0, t, p.x.h0), param).ht.transpose());
    initial = p.x.h0.transpose();
  }
  /// The state after `rows` rows (S_0 for none).
  const Mat<S> &state_after(Eigen::Index rows) const {
    return rows == 0 ? initial : states[rows - 1];
  }
};

/// \brief P^r_[t] and H^r_[t] for every row (the chunk's rows up to it), the note's layout:
/// the transition h' = P h + H of the last chunk of the prefix ending there, by the
/// reference's chunkwise stages (transposed).
template <class S> struct Transitions {
  std::vector<Mat<S>> P, H; ///< indexed by the row tC + r - 1
};
template <class S>
Transitions<S> prefix_transitions(const Dplr<S> &p,
                                  Parameterisation param = Parameterisation::seed) {
  Transitions<S> r;
  for (Eigen::Index t = 1; t <= p.x.q.rows(); ++t) {
    const Head<S> prefix = dplr::as_core(rows_of(p.x, 0, t, p.x.h0), param);
    const dplr::ChunkStages<S> st = dplr::chunk_forward_head(prefix, S(1), p.C).stages;
    r.P.push_back(st.P.back().transpose());
    r.H.push_back(st.H.back().transpose());
  }
  return r;
}

/// \brief One chunk [t] of the note: its rows, Gamma, the reference's WY stage and the states
/// around it, in the note's layout.
template <class S> struct Chunk {
  std::size_t index = 0;     ///< t
  Eigen::Index s = 0, n = 0; ///< rows [s, s + n)
  Mat<S> Q, K, A, B, V, dO;  ///< n rows
  Mat<S> alpha;              ///< n x d_k, alpha_r = exp(g_r)
  Mat<S> Gamma;              ///< n x d_k, gamma^r = prod_{j <= r} alpha_j inside the chunk
  Mat<S> W, C, E, F;         ///< the reference's n x d_k, n x d_v, n x n, n x n
  Mat<S> S0, S1;             ///< S^C_[t-1] and S^C_[t], d_v x d_k
  Mat<S> M, M_1;             ///< the causal mask with and without its diagonal

  Mat<S> left(const Mat<S> &X) const { return X.cwiseProduct(Gamma); }       ///< X<- = X . Gamma
  Mat<S> right(const Mat<S> &X) const { return X.cwiseQuotient(Gamma); }     ///< X-> = X / Gamma
  Mat<S> Dgamma(Eigen::Index r) const { return diag(Mat<S>(Gamma.row(r))); } ///< Diag(gamma^r)
  Mat<S> DgammaC() const { return Dgamma(n - 1); }
  Mat<S> gammaC() const { return Gamma.row(n - 1); }
  Mat<S> I() const { return identity<S>(n); }
  Mat<S> V2() const { return C - W * S0.transpose(); } ///< V_[t],2 = C - W S^C_[t-1]^T
};

template <class S> Chunk<S> chunk_of(const Dplr<S> &p, const Truth<S> &t, std::size_t i) {
  const ChunkRange r = p.chunks[i];
  Chunk<S> c;
  c.index = i, c.s = r.begin, c.n = r.size;
  const auto rows = [&](const Mat<S> &m) { return Mat<S>(m.middleRows(c.s, c.n)); };
  c.Q = rows(p.x.q), c.K = rows(p.x.k), c.A = rows(p.x.a), c.B = rows(p.x.b);
  c.V = rows(p.x.v), c.dO = rows(p.d_o);
  c.alpha = exp_of(rows(p.x.g));
  c.Gamma = cumulative_decay(rows(p.x.g));
  c.W = rows(t.st.w), c.C = rows(t.st.c), c.E = t.st.E[i], c.F = t.st.F[i];
  c.S0 = t.state_after(c.s), c.S1 = t.state_after(c.s + c.n);
  c.M = causal_mask<S>(c.n), c.M_1 = causal_mask<S>(c.n, false);
  return c;
}

/// Both sides chunk by chunk, stacked in order.
template <class S, class F> Sides<S> per_chunk(const Dplr<S> &p, const Truth<S> &t, F sides) {
  std::vector<Mat<S>> l, r;
  for (std::size_t i = 0; i < p.chunks.size(); ++i) {
    Sides<S> s = sides(chunk_of(p, t, i));
    l.push_back(std::move(s.lhs)), r.push_back(std::move(s.rhs));
  }
  return sides_of(l, r);
}

/// Both sides row by row r = 1 ... n of every chunk, stacked in order.
template <class S, class F> Sides<S> per_row(const Dplr<S> &p, const Truth<S> &t, F sides) {
  return per_chunk(p, t, [&](const Chunk<S> &c) {
    std::vector<Mat<S>> l, r;
    for (Eigen::Index k = 0; k < c.n; ++k) {
      Sides<S> s = sides(c, k);
      l.push_back(std::move(s.lhs)), r.push_back(std::move(s.rhs));
    }
    return sides_of(l, r);
  });
}

// ---- exact gradients: dual numbers through the reference ----

template <class S> Mat<Dual<S>> lift(const Mat<S> &m) { return m.template cast<Dual<S>>(); }
template <class S> Head<Dual<S>> lift(const Head<S> &x) {
  Head<Dual<S>> y;
  y.q = lift(x.q), y.k = lift(x.k), y.v = lift(x.v), y.g = lift(x.g), y.h0 = lift(x.h0);
  y.a = lift(x.a), y.b = lift(x.b);
  y.beta = x.beta.template cast<Dual<S>>();
  return y;
}

template <class S> S inner(const Mat<S> &x, const Mat<S> &y) { return x.cwiseProduct(y).sum(); }

/// d loss / d X entry by entry: X seeded with derivative 1 at one entry, loss(X) a dual.
template <class S, class Loss> Mat<S> gradient(const Mat<S> &X, Loss loss) {
  Mat<Dual<S>> x = lift(X);
  Mat<S> g(X.rows(), X.cols());
  for (Eigen::Index i = 0; i < X.rows(); ++i)
    for (Eigen::Index j = 0; j < X.cols(); ++j) {
      x(i, j).b = S(1);
      g(i, j) = loss(x).b;
      x(i, j).b = S(0);
    }
  return g;
}

/// \brief The exact gradient of <dO, O> + <dS_T, S_T> of the reference's recurrence (the
/// note's gated form) with respect to one input, `field(head)`: q, k, v, g, a or b.
template <class S, class Field> Mat<S> input_gradient(const Dplr<S> &p, Field field) {
  using D = Dual<S>;
  const Head<D> x = lift(p.x);
  const Mat<D> d_o = lift(p.d_o), d_ht = lift(p.d_ht);
  return gradient(field(p.x), [&](const Mat<D> &X) {
    Head<D> y = x;
    field(y) = X;
    const HeadOutput<D> out = recurrence(y, Parameterisation::seed);
    return D(inner(out.o, d_o) + inner(out.ht, d_ht));
  });
}

/// The inputs a gradient is taken of: selectors of a head's member.
inline constexpr auto field_q = [](auto &h) -> auto & { return h.q; };
inline constexpr auto field_k = [](auto &h) -> auto & { return h.k; };
inline constexpr auto field_v = [](auto &h) -> auto & { return h.v; };
inline constexpr auto field_g = [](auto &h) -> auto & { return h.g; };
inline constexpr auto field_a = [](auto &h) -> auto & { return h.a; };
inline constexpr auto field_b = [](auto &h) -> auto & { return h.b; };

/// The exact gradients of q, b, k, a and the gates, which the gate's identities read.
template <class S> struct InputGradients {
  Mat<S> dq, db, dk, da, dg;
  explicit InputGradients(const Dplr<S> &p)
      : dq(input_gradient(p, field_q)), db(input_gradient(p, field_b)),
        dk(input_gradient(p, field_k)), da(input_gradient(p, field_a)),
        dg(input_gradient(p, field_g)) {}
  Mat<S> rows(const Mat<S> &m, const Chunk<S> &c) const { return m.middleRows(c.s, c.n); }
};

/// \brief The loss as a function of the state after row `end`, the recurrence run on from it
/// (in duals): the truth of every state gradient.
template <class S> struct RunOn {
  using D = Dual<S>;
  Head<D> rest;
  Mat<D> d_o, d_ht;
  RunOn(const Dplr<S> &p, Eigen::Index end)
      : rest(lift(rows_of(p.x, end, p.x.q.rows() - end, p.x.h0))),
        d_o(lift(Mat<S>(p.d_o.bottomRows(p.x.q.rows() - end)))), d_ht(lift(p.d_ht)) {}
  /// The loss from the state `state` (the note's layout) after row end.
  D loss(const Mat<D> &state) const {
    Head<D> y = rest;
    y.h0 = state.transpose();
    const HeadOutput<D> out = recurrence(y, Parameterisation::seed);
    return inner(out.o, d_o) + inner(out.ht, d_ht);
  }
};

/// dS^C after `end` rows, the note's layout: the exact gradient of the loss with respect to
/// the state there.
template <class S> Mat<S> state_gradient(const Dplr<S> &p, const Truth<S> &t, Eigen::Index end) {
  const RunOn<S> on(p, end);
  return gradient(t.state_after(end), [&](const Mat<Dual<S>> &X) { return on.loss(X); });
}

/// \brief d loss / d gamma^C_[t] of the extra factor only: S^C_[t] = X Diag(gamma^C) with X
/// held, so gamma^C_j scales column j of S^C_[t], and the recurrence runs on from it.
template <class S> Mat<S> extra_gammaC_gradient(const Dplr<S> &p, const Chunk<S> &c) {
  using D = Dual<S>;
  const RunOn<S> on(p, c.s + c.n);
  const Mat<D> S1 = lift(c.S1), gammaC = lift(c.gammaC());
  return gradient(c.gammaC(), [&](const Mat<D> &g) {
    return on.loss(Mat<D>(S1 * diag(Mat<D>(g.cwiseQuotient(gammaC)))));
  });
}

/// \brief The reference's chunkwise forward from its WY stage on, in duals, and the loss: E of
/// every chunk -> W, C (recompute_w_c) -> V2 and the states (chunk_dplr_fwd_h) -> O
/// (chunk_dplr_fwd_o). Any of E, W, C or V_1 = V (as it enters the state and the output)
/// replaced, the exact gradient of the loss with respect to it follows.
template <class S> struct FromWY {
  using D = Dual<S>;
  Mat<D> k, a, v, g_cum, h0, d_o, d_ht;
  dplr::Intra<D> intra;
  std::vector<Mat<D>> E;
  dplr::WC<D> wc;
  std::size_t C;

  FromWY(const Dplr<S> &p, const Truth<S> &t) : C(p.C) {
    const Head<S> core = dplr::as_core(p.x, Parameterisation::seed);
    k = lift(core.k), a = lift(core.a), v = lift(core.v), h0 = lift(core.h0);
    g_cum = lift(t.st.g_cum), d_o = lift(p.d_o), d_ht = lift(p.d_ht);
    const dplr::Intra<S> &in = t.st.intra;
    for (std::size_t c = 0; c < in.A_qk.size(); ++c) {
      intra.A_qk.push_back(lift(in.A_qk[c])), intra.A_qa.push_back(lift(in.A_qa[c]));
      intra.A_ba.push_back(lift(in.A_ba[c])), intra.A_bk.push_back(lift(in.A_bk[c]));
      E.push_back(lift(t.st.E[c]));
    }
    intra.q_left = lift(in.q_left), intra.b_left = lift(in.b_left);
    wc = {lift(t.st.w), lift(t.st.c)};
  }
  D loss(const dplr::WC<D> &w_c, const Mat<D> &v1) const {
    const dplr::StateChain<D> chain = dplr::chunk_dplr_fwd_h(k, a, v1, w_c, g_cum, h0, C);
    const Mat<D> o = dplr::chunk_dplr_fwd_o(v1, intra, chain, C);
    return inner(o, d_o) + inner(chain.ht, d_ht);
  }
  D loss(const std::vector<Mat<D>> &E_all) const {
    return loss(dplr::recompute_w_c(v, intra, E_all, C), v);
  }
};

/// The exact gradients of the loss with respect to the WY stage's W, C (L rows) and V_1.
template <class S> Mat<S> gradient_C(const FromWY<S> &f, const Truth<S> &t) {
  return gradient(t.st.c, [&](const Mat<Dual<S>> &X) {
    return f.loss(dplr::WC<Dual<S>>{f.wc.w, X}, f.v);
  });
}
template <class S> Mat<S> gradient_W(const FromWY<S> &f, const Truth<S> &t) {
  return gradient(t.st.w, [&](const Mat<Dual<S>> &X) {
    return f.loss(dplr::WC<Dual<S>>{X, f.wc.c}, f.v);
  });
}
template <class S> Mat<S> gradient_V1(const FromWY<S> &f, const Dplr<S> &p) {
  return gradient(p.x.v, [&](const Mat<Dual<S>> &X) { return f.loss(f.wc, X); });
}
/// ... and with respect to E_[t] and F_[t] (E = F^-1) of chunk i, every entry.
template <class S> Mat<S> gradient_E(const FromWY<S> &f, const Truth<S> &t, std::size_t i) {
  return gradient(t.st.E[i], [&](const Mat<Dual<S>> &X) {
    std::vector<Mat<Dual<S>>> E = f.E;
    E[i] = X;
    return f.loss(E);
  });
}
template <class S> Mat<S> gradient_F(const FromWY<S> &f, const Truth<S> &t, std::size_t i) {
  return gradient(t.st.F[i], [&](const Mat<Dual<S>> &X) {
    std::vector<Mat<Dual<S>>> E = f.E;
    E[i] = inverse(X);
    return f.loss(E);
  });
}

// ---- the note's formulas, in its layout ----

/// P^r = prod Diag(alpha_i)(I - b_i a_i^T) over rows [s, s + r), the factors left to right as
/// i rises (`rising`) or falls.
template <class S> Mat<S> P_product(const Head<S> &x, Eigen::Index s, Eigen::Index r, bool rising) {
  Mat<S> P = identity<S>(x.k.cols());
  for (Eigen::Index j = 0; j < r; ++j)
    P = Mat<S>(P * transition(x, rising ? s + j : s + r - 1 - j));
  return P;
}
/// H^r = sum_i v_i k_i^T prod_{j = i + 1}^{r} Diag(alpha_j)(I - b_j a_j^T) over rows [s, s + r).
template <class S> Mat<S> H_product(const Head<S> &x, Eigen::Index s, Eigen::Index r, bool rising) {
  Mat<S> H = Mat<S>::Zero(x.v.cols(), x.k.cols());
  for (Eigen::Index i = s; i < s + r; ++i)
    H += x.v.row(i).transpose() * x.k.row(i) * P_product(x, i + 1, s + r - i - 1, rising);
  return H;
}

/// sum_{i <= r} x_i (Diag(gamma^i)^-1 y_i)^T Diag(gamma^r): the note's accumulations (rows r
/// 0-based), x_i and y_i the rows of X and Y.
template <class S>
Mat<S> accumulated(const Mat<S> &X, const Mat<S> &Y, const Mat<S> &Gamma, Eigen::Index r) {
  return X.topRows(r + 1).transpose() * Y.cwiseQuotient(Gamma).topRows(r + 1) *
         diag(Mat<S>(Gamma.row(r)));
}

/// w^r = (I - sum_{i<r} w^i (Diag(gamma^i)^-1 a^i)^T) Diag(gamma^r) b^r, as rows.
template <class S> Mat<S> w_recursion(const Mat<S> &A, const Mat<S> &B, const Mat<S> &Gamma) {
  Mat<S> W(A.rows(), A.cols());
  const Mat<S> A_right = A.cwiseQuotient(Gamma);
  for (Eigen::Index r = 0; r < A.rows(); ++r) {
    const Mat<S> m = identity<S>(A.cols()) - W.topRows(r).transpose() * A_right.topRows(r);
    W.row(r) = (m * diag(Mat<S>(Gamma.row(r))) * B.row(r).transpose()).transpose();
  }
  return W;
}

/// c^r = -sum_{i<r} (v_i (Diag(gamma^i)^-1 k^i)^T + c^i (Diag(gamma^i)^-1 a^i)^T) Diag(gamma^r)
/// b^r, as rows; v_i the rows of V.
template <class S>
Mat<S> c_recursion(const Mat<S> &V, const Mat<S> &K, const Mat<S> &A, const Mat<S> &B,
                   const Mat<S> &Gamma) {
  Mat<S> C(K.rows(), V.cols());
  const Mat<S> K_right = K.cwiseQuotient(Gamma), A_right = A.cwiseQuotient(Gamma);
  for (Eigen::Index r = 0; r < K.rows(); ++r) {
    const Mat<S> m = V.topRows(r).transpose() * K_right.topRows(r) +
                     C.topRows(r).transpose() * A_right.topRows(r);
    C.row(r) = -(m * diag(Mat<S>(Gamma.row(r))) * B.row(r).transpose()).transpose();
  }
  return C;
}

// ---- the backward ----

/// \brief The draw every backward claim starts from: a head with an initial state, its truth,
/// and the loss from the WY stage on.
template <class S> struct Backward {
  Dplr<S> p;
  Truth<S> t;
  FromWY<S> f;
  explicit Backward(Draw<S> &d) : p(draw_dplr(d, true)), t(p), f(p, t) {}
};

/// The exact gradients a backward claim reads: of C, W, V_1 (through the WY stage on, L rows)
/// and of the state at every chunk boundary (the note's layout).
template <class S> struct ChunkGradients {
  Mat<S> dC, dW, dV1;
  std::vector<Mat<S>> dS; ///< dS^C before chunk i at i, after the last chunk at the end
  ChunkGradients(const Dplr<S> &p, const Truth<S> &t, const FromWY<S> &f)
      : dC(gradient_C(f, t)), dW(gradient_W(f, t)), dV1(gradient_V1(f, p)) {
    for (const ChunkRange &r : p.chunks)
      dS.push_back(state_gradient(p, t, r.begin));
    dS.push_back(state_gradient(p, t, p.x.q.rows()));
  }
  const Mat<S> &before(const Chunk<S> &c) const { return dS[c.index]; }    ///< dS^C_[t-1]
  const Mat<S> &after(const Chunk<S> &c) const { return dS[c.index + 1]; } ///< dS^C_[t]
  Mat<S> rows(const Mat<S> &m, const Chunk<S> &c) const { return m.middleRows(c.s, c.n); }
};

/// The note's dQ<- = dO S^C_[t-1] + (dO V_1^T . M) K-> + (dO V_2^T . M) A->.
template <class S> Mat<S> dQ_left(const Chunk<S> &c) {
  return c.dO * c.S0 + scores(c.dO, c.V, c.M) * c.right(c.K) +
         scores(c.dO, c.V2(), c.M) * c.right(c.A);
}
/// The note's dB<- = E^T dW - (E^T dC V^T . M_-1) K-> + (dF . M_-1) A->.
template <class S>
Mat<S> dB_left(const Chunk<S> &c, const Mat<S> &dW, const Mat<S> &dC, const Mat<S> &dF) {
  return c.E.transpose() * dW - scores(Mat<S>(c.E.transpose() * dC), c.V, c.M_1) * c.right(c.K) +
         dF.cwiseProduct(c.M_1) * c.right(c.A);
}

/// d log Gamma_[t] from the exact gradient of the gates: log gamma^r = g_1 + ... + g_r inside
/// the chunk, so d / d log gamma^r = dg_r - dg_{r+1} (dg_r alone on the chunk's last row).
template <class S> Mat<S> dlog_Gamma(const Mat<S> &dg, const Chunk<S> &c) {
  Mat<S> d = dg.middleRows(c.s, c.n);
  d.topRows(c.n - 1) -= dg.middleRows(c.s + 1, c.n - 1);
  return d;
}
/// [0, ..., 0, x]: a row x on the chunk's last row.
template <class S> Mat<S> on_last_row(const Chunk<S> &c, const Mat<S> &x) {
  Mat<S> m = Mat<S>::Zero(c.n, x.cols());
  m.row(c.n - 1) = x;
  return m;
}
template <class S> Mat<S> diag_row(const Mat<S> &m) { return m.diagonal().transpose(); }

// ---- the discussions ----

/// The note's B for DPLR without explicit gating: b_t = Diag(alpha_t)^-1 d_t (D the drawn b).
template <class S> Mat<S> B_of_D(const Chunk<S> &c) { return c.B.cwiseQuotient(c.alpha); }

// ---- What both halves of the claims use (seed_001.cpp, seed_001_backward.cpp) ----

inline const Source forward_src{seed_001, "Gated DPLR Forward", ""};
inline Source backward_src(const char *part) {
  return {seed_001, std::string("Gated DPLR Backward / ") + part, ""};
}
inline const Source kda_src{seed_001, "Discussions / Reducing to KDA", ""};
inline const Source no_gate_src{seed_001, "Discussions / DPLR Without Explicit Gating", ""};

inline Claim gradient_claim(Claim c) {
  c.gradient = true;
  return c;
}
/// The rows the note's v_i (written without [t]) stands for in chunk c: the chunk's own, or
/// rows 1 ... n of the sequence.
template <class S> Mat<S> v_rows(const Dplr<S> &p, const Chunk<S> &c, bool sequence_rows) {
  return sequence_rows ? Mat<S>(p.x.v.topRows(c.n)) : c.V;
}

inline Reading v_index_reading(bool sequence_rows, const std::string &statement, Check check) {
  return {sequence_rows ? "v_i the i-th row of the sequence" : "v_i the i-th row of chunk [t]",
          statement + (sequence_rows ? " (v_i = row i of V)" : " (v_i = v^i_[t])"),
          std::move(check)};
}

/// The claims of the note's backward and its discussions (seed_001_backward.cpp).
std::vector<Claim> backward_and_discussion_claims();

} // namespace ruleproof::proofs::notes::seed001
