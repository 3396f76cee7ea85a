// ruleproof: the claims of seed 003 (Gated DeltaNet in flash-linear-attention: chunkwise
// forward steps 1-5, backward steps 1-7). The truth is the reference: kda's recurrence (the
// states and the output), its chunkwise stages (A0, A, w, u, h, v_new) and its analytic chunk
// backward stage by stage (dv_local, dhu, dqkwg, wy), the scalar gate repeated over the keys
// as gated_delta_rule does (a gradient of the gate is summed over the keys).
#include "claims.hpp"
#include "common.hpp"
#include "reference/gated_delta_rule/gated_delta_rule.hpp"
#include "seed_001_support.hpp"

namespace ruleproof::proofs::notes {
namespace {

/// One drawn head in kda's layout (scalar gate repeated over the keys), its cotangents.
template <class S> struct Gdn {
  Head<S> x;  ///< g is L x K, every column the same log-gate
  Mat<S> lg;  ///< L x 1, the log-gates log alpha_t
  S scale;    ///< the reference's scale
  Mat<S> d_o; ///< L x V
  Mat<S> d_ht;
  std::size_t C;
  std::vector<shared::ChunkRange> chunks;
};

template <class D> auto draw_gdn(D &d, bool unit_scale = true) {
  using S = typename D::Scalar;
  Gdn<S> r;
  r.x = draw_head(d, 1, true, true);
  r.lg = r.x.g;
  r.x.g = r.lg.replicate(1, d.sizes.K).eval();
  r.scale = unit_scale ? S(1) : d.positive();
  r.d_o = d.values(d.sizes.T, d.sizes.V);
  r.d_ht = d.values(d.sizes.K, d.sizes.V);
  r.C = d.sizes.C;
  r.chunks = shared::chunks_of(static_cast<Eigen::Index>(d.sizes.T), d.sizes.C);
  return r;
}

/// The reference, every stage of its chunkwise forward and backward.
template <class S> struct Truth {
  kda::ChunkForward<S> fwd;
  kda::detail::ChunkGates<S> gates;
  Mat<S> dv_local;
  kda::StateGrads<S> dhu;
  kda::QKWGrads<S> qkw;
  kda::WYGrads<S> wy;
  HeadGrads<S> grads;
  std::vector<Mat<S>> end_states; ///< the recurrence's state after each chunk
  Mat<S> o;                       ///< the recurrence's output

  explicit Truth(const Gdn<S> &g, bool backward = true) {
    const Head<S> &x = g.x;
    fwd = kda::chunk_forward_head(x, g.scale, g.C, GateKind::scalar);
    const auto &st = fwd.stages;
    gates = kda::detail::chunk_gates(st.g_cum, g.C, true);
    for (const auto &r : g.chunks) {
      Head<S> p = x;
      const Eigen::Index t = r.begin + r.size;
      p.q = x.q.topRows(t), p.k = x.k.topRows(t), p.v = x.v.topRows(t), p.g = x.g.topRows(t);
      p.beta = x.beta.head(t);
      end_states.push_back(kda::recurrent_head(p, g.scale).ht);
    }
    o = kda::recurrent_head(x, g.scale).o;
    if (!backward)
      return;
    dv_local = kda::chunk_bwd_dv_local(x.q, x.k, gates, g.d_o, g.scale);
    dhu = kda::chunk_bwd_dhu(x.q, x.k, st.w, gates, g.d_o, g.d_ht, dv_local, g.scale);
    qkw = kda::chunk_bwd_dqkwg(x.q, x.k, st.v_new, gates, st.h, dhu.dh, g.d_o, dhu.dv, g.scale);
    wy = kda::chunk_wy_bwd(x.k, x.v, x.beta, gates, st.A, qkw.dw, dhu.dv);
    grads = kda::chunk_backward_head(x, HeadCotangent<S>{g.d_o, g.d_ht}, g.scale, g.C,
                                     GateKind::scalar);
  }
  /// The state before chunk c (the initial state for c = 0).
  Mat<S> start(std::size_t c, const Head<S> &x) const { return c == 0 ? x.h0 : end_states[c - 1]; }
};

/// The note's chunk quantities at chunk r: gamma (step 1, the cumulative log-gate), and the
/// rows of every input.
template <class S> struct Chunk {
  Mat<S> q, k, v, d_o; ///< n rows
  Mat<S> beta;         ///< n x 1
  Mat<S> gamma;        ///< n x 1: gamma^r = sum_{i <= r} log alpha_i inside the chunk
  Eigen::Index s, n;
  S gammaC() const { return gamma(n - 1, 0); }
};

template <class S> Chunk<S> chunk_of(const Gdn<S> &g, const shared::ChunkRange &r) {
  Chunk<S> c;
  c.s = r.begin, c.n = r.size;
  c.q = g.x.q.middleRows(r.begin, r.size), c.k = g.x.k.middleRows(r.begin, r.size);
  c.v = g.x.v.middleRows(r.begin, r.size), c.d_o = g.d_o.middleRows(r.begin, r.size);
  c.beta = Mat<S>(g.x.beta.segment(r.begin, r.size));
  c.gamma = Mat<S>(r.size, 1);
  S sum(0);
  for (Eigen::Index i = 0; i < r.size; ++i) {
    sum += g.lg(r.begin + i, 0);
    c.gamma(i, 0) = sum;
  }
  return c;
}

/// Both sides chunk by chunk: `chunk_sides(i, c)` gives chunk i's two sides, stacked in order.
template <class S, class F> Sides<S> per_chunk(const Gdn<S> &g, F chunk_sides) {
  std::vector<Mat<S>> l, r;
  for (std::size_t i = 0; i < g.chunks.size(); ++i) {
    Sides<S> s = chunk_sides(i, chunk_of(g, g.chunks[i]));
    l.push_back(std::move(s.lhs)), r.push_back(std::move(s.rhs));
  }
  return sides_of(l, r);
}

/// Diag(gamma) as the note writes it: gamma itself (`as_exp` false) or exp(gamma).
template <class S> Mat<S> Dg(const Mat<S> &gamma, bool as_exp, int power = 1) {
  using std::exp;
  Mat<S> d = Mat<S>::Zero(gamma.rows(), gamma.rows());
  for (Eigen::Index i = 0; i < gamma.rows(); ++i) {
    const S x = as_exp ? S(exp(gamma(i, 0))) : gamma(i, 0);
    d(i, i) = power == 1 ? x : S(S(1) / x);
  }
  return d;
}
template <class S> Mat<S> Db(const Mat<S> &beta) { return Mat<S>(beta.col(0).asDiagonal()); }
/// Diag(exp(gamma^C - gamma)).
template <class S> Mat<S> Dto_end(const Chunk<S> &c) {
  using std::exp;
  Mat<S> d = Mat<S>::Zero(c.n, c.n);
  for (Eigen::Index i = 0; i < c.n; ++i)
    d(i, i) = exp(S(c.gammaC() - c.gamma(i, 0)));
  return d;
}

/// Row sums (the gradient of a scalar gate repeated over the keys).
template <class S> Mat<S> row_sum(const Mat<S> &m) { return m.rowwise().sum(); }

template <class S> Mat<S> diag_vec(const Mat<S> &m) { return Mat<S>(m.diagonal()); }

/// A left side whose shape cannot match: the note's product is undefined at these sizes.
template <class S> Mat<S> undefined_product(Eigen::Index rows, Eigen::Index cols) {
  return Mat<S>::Zero(rows + 1, cols + 1);
}

template <class S> Mat<S> chunk_rows(const Mat<S> &m, const Chunk<S> &c) {
  return m.middleRows(c.s, c.n);
}

/// A0 = Diag(beta)(K< K>^T (.) M_-1) with the arrows read with Diag(gamma) or Diag(exp gamma).
template <class S> Mat<S> note_A0(const Chunk<S> &c, bool as_exp) {
  const Mat<S> kl = Dg(c.gamma, as_exp) * c.k, kr = Dg(c.gamma, as_exp, -1) * c.k;
  return Db(c.beta) * Mat<S>(kl * kr.transpose()).cwiseProduct(causal_mask<S>(c.n, false));
}

// ---- exact gradients of one chunk's loss: dual numbers (seed_001_support.hpp) ----

using seed001::gradient;
using seed001::inner;
using seed001::lift;

/// Step 5's part of one chunk's loss, <dO_[t], O_[t]> + <dS_[t], S_[t]>, as a function of the
/// keys and of e = exp gamma, V_new and S_[t-1] held fixed (the reference's output and state
/// update); the state's decays read exp gamma^C as a variable of its own, eC.
template <class S> struct Step5Loss {
  using D = Dual<S>;
  Mat<D> q, d_o, vn, S0, dS;
  Step5Loss(const Gdn<S> &g, const Truth<S> &t, std::size_t i, const Chunk<S> &c)
      : q(lift(c.q)), d_o(lift(c.d_o)), vn(lift(chunk_rows(t.fwd.stages.v_new, c))),
        S0(lift(t.start(i, g.x))), dS(lift(t.dhu.dh[i])) {}
  D output(const Mat<D> &e, const Mat<D> &k) const {
    const Mat<D> E = Dg(e, false), Ei = Dg(e, false, -1);
    const Mat<D> B = Mat<D>((E * q) * (Ei * k).transpose()).cwiseProduct(causal_mask<D>(e.rows()));
    return inner(d_o, Mat<D>(E * q * S0 + B * vn));
  }
  D state(const Mat<D> &e, const D &eC, const Mat<D> &k) const {
    Mat<D> to_end = Mat<D>::Zero(e.rows(), e.rows());
    for (Eigen::Index r = 0; r < e.rows(); ++r)
      to_end(r, r) = eC / e(r, 0);
    return inner(dS, Mat<D>(eC * S0 + k.transpose() * to_end * vn));
  }
};

/// Step 6's part of one chunk's loss, <dW<_[t], W<_[t]> + <dU_[t], U_[t]> with W< = A
/// Diag(e) Diag(beta) K and U = A Diag(beta) V, dW< and dU the truth's (qkw.dw, dhu.dv), as a
/// function of A and of e = exp gamma.
template <class S> struct Step6Loss {
  using D = Dual<S>;
  Mat<D> k, bk, bv, dW, dU;
  Step6Loss(const Truth<S> &t, const Chunk<S> &c)
      : k(lift(c.k)), bk(lift(Mat<S>(Db(c.beta) * c.k))), bv(lift(Mat<S>(Db(c.beta) * c.v))),
        dW(lift(chunk_rows(t.qkw.dw, c))), dU(lift(chunk_rows(t.dhu.dv, c))) {}
  D of(const Mat<D> &A, const Mat<D> &e) const {
    return inner(dW, Mat<D>(A * Dg(e, false) * bk)) + inner(dU, Mat<D>(A * bv));
  }
  /// A = (I + A0)^-1, A0 strictly lower (its other entries masked).
  static Mat<D> inverse_of(const Mat<D> &A0) {
    const Eigen::Index n = A0.rows();
    return seed001::inverse<D>(
        Mat<D>(Mat<D>::Identity(n, n) + Mat<D>(A0.cwiseProduct(causal_mask<D>(n, false)))));
  }
  /// A0 = Diag(beta)(Diag(e) G Diag(e)^-1 (.) M_-1) from G = K K^T.
  Mat<D> A0_of(const Mat<D> &G, const Mat<D> &e, const Mat<S> &beta) const {
    return lift(Db(beta)) * Mat<D>(Dg(e, false) * G * Dg(e, false, -1));
  }
};

/// The exact gradient of step 6's loss in A_x (which the note does not define), through A =
/// (I + A0)^-1 with A0 = Diag(exp gamma) A_x Diag(exp gamma)^-1 (`gates_out`) or A0 = A_x.
template <class S>
Mat<S> dAx_exact(const Truth<S> &t, std::size_t i, const Chunk<S> &c, bool gates_out) {
  using D = Dual<S>;
  const Step6Loss<S> L(t, c);
  const Mat<D> e = lift(exp_of(c.gamma)), E = Dg(e, false), Ei = Dg(e, false, -1);
  const Mat<S> &A0 = t.fwd.stages.A0[i];
  const Mat<S> at = gates_out ? Mat<S>(Dg(c.gamma, true, -1) * A0 * Dg(c.gamma, true)) : A0;
  return gradient(at, [&](const Mat<D> &Ax) {
    return L.of(Step6Loss<S>::inverse_of(gates_out ? Mat<D>(E * Ax * Ei) : Ax), e);
  });
}

const Source fwd_src(const char *step) { return {seed_003, std::string("Forward / ") + step, ""}; }
const Source bwd_src(const char *step) { return {seed_003, std::string("Backward / ") + step, ""}; }

std::vector<Claim> forward_claims() {
  std::vector<Claim> out;
  out.push_back(claim(
      "003.fwd.step1.gamma", fwd_src("Step 1"),
      R"(\boldsymbol{\gamma}_{[t]}^r &= \sum_{i=tC+1}^{tC+r} \log \alpha_i \in \mathbb{R})",
      "gamma_[t]^r = sum_{i=tC+1}^{tC+r} log alpha_i (chunk_local_cumsum)", check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const Gdn<S> g = draw_gdn(d);
        const Truth<S> t(g, false);
        return per_chunk(g, [&](std::size_t, const Chunk<S> &c) {
          return Sides<S>{c.gamma, t.fwd.stages.g_cum.block(c.s, 0, c.n, 1)};
        });
      })));
  {
    Claim c = claim(
        "003.fwd.step2.A0", fwd_src("Step 2"),
        R"(\widetilde{\mathbf{A_0}}_{[t]} = \text{Diag}(\boldsymbol{\beta}_{[t]}) \left( \overleftarrow{\mathbf{K}_{[t]}} \overrightarrow{\mathbf{K}_{[t]}}^\top \odot \mathbf{M}_{-1} \right))",
        "A0_[t] = Diag(beta)(K< K>^T (.) M_-1), K< = Diag(gamma) K, K> = Diag(gamma)^-1 K "
        "(Notation), gamma the cumulative log-gate of step 1");
    for (const bool as_exp : {false, true})
      c.readings.push_back(
          {as_exp ? "arrows with Diag(exp gamma)"
                  : "arrows with Diag(gamma), gamma the log (step 1)",
           as_exp ? "A0 = Diag(beta)((Diag(exp gamma) K)(Diag(exp -gamma) K)^T (.) M_-1)"
                  : "A0 = Diag(beta)((Diag(gamma) K)(Diag(gamma)^-1 K)^T (.) M_-1)",
           check_of([as_exp](auto &d) {
             using S = scalar_of<decltype(d)>;
             const Gdn<S> g = draw_gdn(d);
             const Truth<S> t(g, false);
             return per_chunk(g, [&](std::size_t i, const Chunk<S> &c) {
               return Sides<S>{note_A0(c, as_exp), t.fwd.stages.A0[i]};
             });
           })});
    out.push_back(c);
  }
  out.push_back(
      claim("003.fwd.step2.A", fwd_src("Step 2"),
            R"(\widetilde{\mathbf{A}}_{[t]} = (\mathbf{I} + \widetilde{\mathbf{A_0}}_{[t]})^{-1})",
            "A_[t] = (I + A0_[t])^-1, A0 with Diag(exp gamma) arrows", check_of([](auto &d) {
              using S = scalar_of<decltype(d)>;
              const Gdn<S> g = draw_gdn(d);
              const Truth<S> t(g, false);
              return per_chunk(g, [&](std::size_t i, const Chunk<S> &c) {
                return Sides<S>{shared::unit_lower_inverse(note_A0(c, true)), t.fwd.stages.A[i]};
              });
            })));
  out.push_back(claim(
      "003.fwd.step3.U", fwd_src("Step 3"),
      R"(\mathbf{U}_{[t]} &= \widetilde{\mathbf{A}}_{[t]} \text{Diag}(\boldsymbol{\beta}_{[t]}) \mathbf{V}_{[t]})",
      "U_[t] = A_[t] Diag(beta_[t]) V_[t]", check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const Gdn<S> g = draw_gdn(d);
        const Truth<S> t(g, false);
        return per_chunk(g, [&](std::size_t i, const Chunk<S> &c) {
          return Sides<S>{t.fwd.stages.A[i] * Db(c.beta) * c.v, chunk_rows(t.fwd.stages.u, c)};
        });
      })));
  out.push_back(claim(
      "003.fwd.step3.W", fwd_src("Step 3"),
      R"(\overleftarrow{\mathbf{W}_{[t]}} &= \widetilde{\mathbf{A}}_{[t]} \text{Diag}(\exp \boldsymbol{\gamma}_{[t]}) \text{Diag}(\boldsymbol{\beta}_{[t]}) \mathbf{K}_{[t]})",
      "W<_[t] = A_[t] Diag(exp gamma_[t]) Diag(beta_[t]) K_[t]", check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const Gdn<S> g = draw_gdn(d);
        const Truth<S> t(g, false);
        return per_chunk(g, [&](std::size_t i, const Chunk<S> &c) {
          return Sides<S>{t.fwd.stages.A[i] * Dg(c.gamma, true) * Db(c.beta) * c.k,
                          chunk_rows(t.fwd.stages.w, c)};
        });
      })));
  out.push_back(claim(
      "003.fwd.step4.v_new", fwd_src("Step 4"),
      R"(\mathbf{V}_{[t],new} &= \mathbf{U}_{[t]} - \overleftarrow{\mathbf{W}_{[t]}} \mathbf{S}_{[t-1]}^{C})",
      "V_new = U - W< S_[t-1]^C, S_[t-1]^C the recurrence's state before the chunk",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const Gdn<S> g = draw_gdn(d);
        const Truth<S> t(g, false);
        return per_chunk(g, [&](std::size_t i, const Chunk<S> &c) {
          return Sides<S>{chunk_rows(t.fwd.stages.u, c) -
                              chunk_rows(t.fwd.stages.w, c) * t.start(i, g.x),
                          chunk_rows(t.fwd.stages.v_new, c)};
        });
      })));
  // Step 4's state update: the decay factor as written (gamma^C, a log) and corrected.
  for (const bool corrected : {false, true}) {
    Claim c = claim(
        corrected ? "003.fwd.step4.state.corrected" : "003.fwd.step4.state", fwd_src("Step 4"),
        R"(\mathbf{S}_{[t]}^{C} &= \boldsymbol{\gamma}_{[t]}^C \mathbf{S}_{[t-1]}^{C} + \mathbf{K}_{[t]}^\top)",
        corrected ? "S_[t]^C = exp(gamma_[t]^C) S_[t-1]^C + K^T (Diag(exp(gamma^C - gamma)) V_new)"
                  : "S_[t]^C = gamma_[t]^C S_[t-1]^C + K^T (Diag(exp(gamma^C - gamma)) V_new)",
        check_of([corrected](auto &d) {
          using S = scalar_of<decltype(d)>;
          using std::exp;
          const Gdn<S> g = draw_gdn(d);
          const Truth<S> t(g, false);
          return per_chunk(g, [&](std::size_t i, const Chunk<S> &c) {
            const S decay = corrected ? S(exp(c.gammaC())) : c.gammaC();
            return Sides<S>{decay * t.start(i, g.x) +
                                c.k.transpose() * (Dto_end(c) * chunk_rows(t.fwd.stages.v_new, c)),
                            t.end_states[i]};
          });
        }));
    if (corrected)
      c.correction_of = "003.fwd.step4.state";
    out.push_back(c);
  }
  {
    Claim c = claim(
        "003.fwd.step5.output", fwd_src("Step 5"),
        R"(\mathbf{O}_{[t]} = \text{Diag}\left(\exp \boldsymbol{\gamma}_{[t]} \right) \mathbf{Q}_{[t]} \mathbf{S}_{[t-1]}^{C})",
        "O_[t] = Diag(exp gamma) Q S_[t-1]^C + (Q< K>^T (.) M) V_new; the note never says "
        "where the scale (an argument of chunk_gated_delta_rule_fwd) enters");
    for (const bool scaled : {false, true})
      c.readings.push_back(
          {scaled ? "Q the scaled queries scale q" : "Q the queries q (no scale)",
           scaled ? "O = Diag(exp gamma)(scale Q) S + ((scale Q)< K>^T (.) M) V_new"
                  : "O = Diag(exp gamma) Q S + (Q< K>^T (.) M) V_new",
           check_of([scaled](auto &d) {
             using S = scalar_of<decltype(d)>;
             const Gdn<S> g = draw_gdn(d, false);
             const Truth<S> t(g, false);
             return per_chunk(g, [&](std::size_t i, const Chunk<S> &c) {
               const Mat<S> q = scaled ? Mat<S>(g.scale * c.q) : c.q;
               const Mat<S> ql = Dg(c.gamma, true) * q, kr = Dg(c.gamma, true, -1) * c.k;
               return Sides<S>{Dg(c.gamma, true) * q * t.start(i, g.x) +
                                   Mat<S>(ql * kr.transpose()).cwiseProduct(causal_mask<S>(c.n)) *
                                       chunk_rows(t.fwd.stages.v_new, c),
                               chunk_rows(t.o, c)};
             });
           })});
    out.push_back(c);
  }
  out.push_back(claim(
      "003.fwd.steps1to5.chained", fwd_src("Steps 1-5"),
      R"(Corresponding code: fla.ops.common.chunk_o -> chunk_fwd_o)",
      "steps 1-5 chained from the initial state, each as corrected (Diag(exp gamma) arrows, "
      "exp(gamma^C) in step 4, Q the scaled queries): every O_[t] and the final state equal "
      "the recurrence's",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        using std::exp;
        const Gdn<S> g = draw_gdn(d, false);
        const Truth<S> t(g, false);
        Mat<S> state = g.x.h0, o(g.x.q.rows(), g.x.v.cols());
        for (const auto &ch : g.chunks) {
          const Chunk<S> c = chunk_of(g, ch);
          const Mat<S> E = Dg(c.gamma, true), Ei = Dg(c.gamma, true, -1);
          const Mat<S> A = shared::unit_lower_inverse(note_A0(c, true));
          const Mat<S> U = A * Db(c.beta) * c.v, W = A * E * Db(c.beta) * c.k;
          const Mat<S> v_new = U - W * state;
          const Mat<S> q = g.scale * c.q;
          o.middleRows(c.s, c.n) =
              E * q * state +
              Mat<S>((E * q) * (Ei * c.k).transpose()).cwiseProduct(causal_mask<S>(c.n)) * v_new;
          state = S(exp(c.gammaC())) * state + c.k.transpose() * (Dto_end(c) * v_new);
        }
        return sides_of<S>({o, state}, {t.o, t.end_states.back()});
      })));
  return out;
}

std::vector<Claim> backward_claims() {
  std::vector<Claim> out;
  out.push_back(claim(
      "003.bwd.step3.dU_from_O", bwd_src("Step 3"),
      R"(\left( \overrightarrow{\mathbf{K}_{[t]}} \overleftarrow{\mathbf{Q}_{[t]}}^\top \odot \mathbf{M}^\top \right) \delta \mathbf{O}_{[t]})",
      "dU_[t]|_O = (K> Q<^T (.) M^T) dO_[t] (arrows with Diag(exp gamma); scale 1)",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const Gdn<S> g = draw_gdn(d);
        const Truth<S> t(g);
        return per_chunk(g, [&](std::size_t, const Chunk<S> &c) {
          const Mat<S> ql = Dg(c.gamma, true) * c.q, kr = Dg(c.gamma, true, -1) * c.k;
          return Sides<S>{
              Mat<S>(kr * ql.transpose()).cwiseProduct(Mat<S>(causal_mask<S>(c.n).transpose())) *
                  c.d_o,
              chunk_rows(t.dv_local, c)};
        });
      })));
  out.push_back(claim(
      "003.bwd.step4.dU", bwd_src("Step 4"),
      R"(\delta \mathbf{U}_{[t]} = \text{Diag}\left(\exp(\boldsymbol{\gamma}_{[t]}^C - \boldsymbol{\gamma}_{[t]})\right) \mathbf{K}_{[t]} \delta \mathbf{S}_{[t]}^{C})",
      "dU_[t] = Diag(exp(gamma^C - gamma)) K dS_[t]^C + dU_[t]|_O, dS_[t]^C the reference's "
      "gradient of the state after chunk t",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const Gdn<S> g = draw_gdn(d);
        const Truth<S> t(g);
        return per_chunk(g, [&](std::size_t i, const Chunk<S> &c) {
          return Sides<S>{Dto_end(c) * c.k * t.dhu.dh[i] + chunk_rows(t.dv_local, c),
                          chunk_rows(t.dhu.dv, c)};
        });
      })));
  for (const bool corrected : {false, true}) {
    Claim c = claim(
        corrected ? "003.bwd.step4.dS.corrected" : "003.bwd.step4.dS", bwd_src("Step 4"),
        R"(\delta \mathbf{S}_{[t]}^{C} = \exp(\boldsymbol{\gamma}_{[t]}^C) \delta \mathbf{S}_{[t+1]}^{C})",
        corrected ? "dS_[t]^C = exp(gamma_[t+1]^C) dS_[t+1]^C + Q<_[t+1]^T dO_[t+1] - "
                    "W<_[t+1]^T dU_[t+1] (the next chunk's decay)"
                  : "dS_[t]^C = exp(gamma_[t]^C) dS_[t+1]^C + Q<_[t+1]^T dO_[t+1] - "
                    "W<_[t+1]^T dU_[t+1]",
        check_of([corrected](auto &d) {
          using S = scalar_of<decltype(d)>;
          using std::exp;
          const Gdn<S> g = draw_gdn(d);
          const Truth<S> t(g);
          const Mat<S> none = Mat<S>::Zero(1, g.x.v.cols()); // one chunk: nothing to compare
          std::vector<Mat<S>> l{none}, r{none};
          for (std::size_t i = 0; i + 1 < g.chunks.size(); ++i) {
            const Chunk<S> c = chunk_of(g, g.chunks[i]), n = chunk_of(g, g.chunks[i + 1]);
            const S decay = exp(corrected ? n.gammaC() : c.gammaC());
            l.push_back(decay * t.dhu.dh[i + 1] +
                        Mat<S>(Dg(n.gamma, true) * n.q).transpose() * n.d_o -
                        chunk_rows(t.fwd.stages.w, n).transpose() * chunk_rows(t.dhu.dv, n));
            r.push_back(t.dhu.dh[i]);
          }
          return sides_of(l, r);
        }));
    c.min_sizes = {2, 1, 1, 1};
    if (corrected)
      c.correction_of = "003.bwd.step4.dS";
    out.push_back(c);
  }
  // Step 5: dB, B (which the note does not define) read as the output's scores.
  {
    Claim c = claim(
        "003.bwd.step5.dB", bwd_src("Step 5"),
        R"(\delta \mathbf{B}_{[t]} &= \delta \mathbf{O}_{[t]} \mathbf{V}_{[t],new}^\top \odot \mathbf{M})",
        "dB_[t] = dO_[t] V_new^T (.) M, B the scores Q< K>^T of the output O_[t] = Diag(exp "
        "gamma) Q S_[t-1] + (B (.) M) V_new: the exact gradient of <dO_[t], O_[t]> in B, V_new "
        "and S_[t-1] held fixed",
        check_of([](auto &d) {
          using S = scalar_of<decltype(d)>;
          using D = Dual<S>;
          const Gdn<S> g = draw_gdn(d);
          const Truth<S> t(g);
          return per_chunk(g, [&](std::size_t i, const Chunk<S> &c) {
            const Step5Loss<S> L(g, t, i, c);
            const Mat<S> vn = chunk_rows(t.fwd.stages.v_new, c), E = Dg(c.gamma, true);
            const Mat<S> scores = (E * c.q) * (Dg(c.gamma, true, -1) * c.k).transpose();
            const Mat<S> dB = gradient(scores, [&](const Mat<D> &B) {
              return inner(L.d_o, Mat<D>(lift(Mat<S>(E * c.q)) * L.S0 +
                                         B.cwiseProduct(causal_mask<D>(c.n)) * L.vn));
            });
            return Sides<S>{Mat<S>(c.d_o * vn.transpose()).cwiseProduct(causal_mask<S>(c.n)), dB};
          });
        }));
    c.gradient = true;
    out.push_back(c);
  }
  // Step 5: dQ and dK part 1, with Diag(gamma) as written and Diag(exp gamma).
  for (const bool corrected : {false, true}) {
    Claim c = claim(
        corrected ? "003.bwd.step5.dQ.corrected" : "003.bwd.step5.dQ", bwd_src("Step 5"),
        R"(\delta \mathbf{Q}_{[t]} &= \text{Diag}(\boldsymbol{\gamma}_{[t]}) \delta \mathbf{O}_{[t]} \mathbf{S}_{[t-1]}^{C\top})",
        corrected ? "dQ = Diag(exp gamma) dO S_[t-1]^T + (Diag(exp gamma) dB Diag(exp gamma)^-1) "
                    "K, dB = dO V_new^T (.) M (scale 1)"
                  : "dQ = Diag(gamma) dO S_[t-1]^T + (Diag(gamma) dB Diag(gamma)^-1) K, dB = dO "
                    "V_new^T (.) M (scale 1)",
        check_of([corrected](auto &d) {
          using S = scalar_of<decltype(d)>;
          const Gdn<S> g = draw_gdn(d);
          const Truth<S> t(g);
          return per_chunk(g, [&](std::size_t i, const Chunk<S> &c) {
            const Mat<S> dB = Mat<S>(c.d_o * chunk_rows(t.fwd.stages.v_new, c).transpose())
                                  .cwiseProduct(causal_mask<S>(c.n));
            const Mat<S> D = Dg(c.gamma, corrected), Di = Dg(c.gamma, corrected, -1);
            return Sides<S>{D * c.d_o * t.start(i, g.x).transpose() + D * dB * Di * c.k,
                            chunk_rows(t.grads.dq, c)};
          });
        }));
    c.gradient = true;
    if (corrected)
      c.correction_of = "003.bwd.step5.dQ";
    out.push_back(c);
  }
  for (const bool corrected : {false, true}) {
    Claim c = claim(
        corrected ? "003.bwd.step5.dK_part1.corrected" : "003.bwd.step5.dK_part1",
        bwd_src("Step 5"),
        R"(\left( \text{Diag}(\boldsymbol{\gamma}_{[t]}) \delta \mathbf{B}_{[t]} \text{Diag}(\boldsymbol{\gamma}_{[t]})^{-1} \right)^\top \mathbf{Q}_{[t]})",
        corrected ? "dK_part1 = Diag(exp(gamma^C - gamma)) V_new dS_[t]^T + (Diag(exp gamma) dB "
                    "Diag(exp gamma)^-1)^T Q"
                  : "dK_part1 = Diag(exp(gamma^C - gamma)) V_new dS_[t]^T + (Diag(gamma) dB "
                    "Diag(gamma)^-1)^T Q",
        check_of([corrected](auto &d) {
          using S = scalar_of<decltype(d)>;
          const Gdn<S> g = draw_gdn(d);
          const Truth<S> t(g);
          return per_chunk(g, [&](std::size_t i, const Chunk<S> &c) {
            const Mat<S> vn = chunk_rows(t.fwd.stages.v_new, c);
            const Mat<S> dB = Mat<S>(c.d_o * vn.transpose()).cwiseProduct(causal_mask<S>(c.n));
            const Mat<S> D = Dg(c.gamma, corrected), Di = Dg(c.gamma, corrected, -1);
            return Sides<S>{Dto_end(c) * vn * t.dhu.dh[i].transpose() +
                                Mat<S>(D * dB * Di).transpose() * c.q,
                            chunk_rows(t.qkw.dk, c)};
          });
        }));
    c.gradient = true;
    if (corrected)
      c.correction_of = "003.bwd.step5.dK_part1";
    out.push_back(c);
  }
  // Step 5: dK part 1 as its two paths, each the exact gradient of its part of the loss.
  {
    Claim c = claim(
        "003.bwd.step5.dK_part1_paths", bwd_src("Step 5"),
        R"(&= \left.\delta \mathbf{K}_{[t]}\right|_{\text{from } \mathbf{S}_{[t]} \text{ w/o } \mathbf{V}_{[t],new}} + \left.\delta \mathbf{K}_{[t]}\right|_{\text{from } \mathbf{O}_{[t]})",
        "dK_part1 = dK|_S + dK|_O: the gradients in K of <dS_[t], S_[t]> and of <dO_[t], O_[t]>, "
        "V_new and S_[t-1] held fixed, add up to the reference's dK through the scores and the "
        "state update",
        check_of([](auto &d) {
          using S = scalar_of<decltype(d)>;
          using D = Dual<S>;
          const Gdn<S> g = draw_gdn(d);
          const Truth<S> t(g);
          return per_chunk(g, [&](std::size_t i, const Chunk<S> &c) {
            const Step5Loss<S> L(g, t, i, c);
            const Mat<D> e = lift(exp_of(c.gamma));
            const D eC = e(c.n - 1, 0);
            const Mat<S> dK_S = gradient(c.k, [&](const Mat<D> &k) { return L.state(e, eC, k); });
            const Mat<S> dK_O = gradient(c.k, [&](const Mat<D> &k) { return L.output(e, k); });
            return Sides<S>{Mat<S>(dK_S + dK_O), chunk_rows(t.qkw.dk, c)};
          });
        }));
    c.gradient = true;
    out.push_back(c);
  }
  {
    Claim c =
        claim("003.bwd.step5.dW", bwd_src("Step 5"),
              R"(\delta \mathbf{W}_{[t]} &= - \delta \mathbf{U}_{[t]} \mathbf{S}_{[t-1]}^{C\top})",
              "dW_[t] = -dU_[t] S_[t-1]^T", check_of([](auto &d) {
                using S = scalar_of<decltype(d)>;
                const Gdn<S> g = draw_gdn(d);
                const Truth<S> t(g);
                return per_chunk(g, [&](std::size_t i, const Chunk<S> &c) {
                  return Sides<S>{Mat<S>(-chunk_rows(t.dhu.dv, c) * t.start(i, g.x).transpose()),
                                  chunk_rows(t.qkw.dw, c)};
                });
              }));
    c.gradient = true;
    out.push_back(c);
  }
  // Step 5: the gradient of the chunk's end decay gamma^C through the state. The truth:
  // S_[t] is exp(gamma^C) times a term free of gamma^C, so d/d gamma^C = Tr(dS_[t]^T S_[t]).
  {
    Claim c = claim(
        "003.bwd.step5.dgammaC", bwd_src("Step 5"),
        R"(\text{Tr}\left( \delta \mathbf{S}_{[t]}^{C\top} \mathbf{S}_{[t-1]}^C \right) \exp \boldsymbol{\gamma}_{[t]}^C + \text{Tr}\left()",
        "d gamma^C = Tr(dS_[t]^T S_[t-1]) exp(gamma^C) + Tr(dK|_S K^T), dK|_S = "
        "Diag(exp(gamma^C - gamma)) V_new dS_[t]^T",
        check_of([](auto &d) {
          using S = scalar_of<decltype(d)>;
          using std::exp;
          const Gdn<S> g = draw_gdn(d);
          const Truth<S> t(g);
          Mat<S> l(g.chunks.size(), 1), r(g.chunks.size(), 1);
          for (std::size_t i = 0; i < g.chunks.size(); ++i) {
            const Chunk<S> c = chunk_of(g, g.chunks[i]);
            const Mat<S> &dS = t.dhu.dh[i];
            const Mat<S> dK_S = Dto_end(c) * chunk_rows(t.fwd.stages.v_new, c) * dS.transpose();
            l(i, 0) = Mat<S>(dS.transpose() * t.start(i, g.x)).trace() * exp(c.gammaC()) +
                      Mat<S>(dK_S * c.k.transpose()).trace();
            r(i, 0) = Mat<S>(dS.transpose() * t.end_states[i]).trace();
          }
          return Sides<S>{l, r};
        }));
    c.gradient = true;
    out.push_back(c);
  }
  for (const bool corrected : {false, true}) {
    Claim c = claim(
        corrected ? "003.bwd.step5.dgammaC_expanded.corrected" : "003.bwd.step5.dgammaC_expanded",
        bwd_src("Step 5"),
        R"(\left( \mathbf{K}_{[t]}^\top \text{Diag}(\boldsymbol{\gamma}_{[t]})^{-1} \mathbf{V}_{[t]}^\top \right) \right) \exp \boldsymbol{\gamma}_{[t]}^C)",
        corrected
            ? "d gamma^C = Tr(dS^T S_[t-1] + dS^T (K^T Diag(exp gamma)^-1 V_new)) exp(gamma^C)"
            : "d gamma^C = Tr(dS^T S_[t-1] + dS^T (K^T Diag(gamma)^-1 V^T)) exp(gamma^C) "
              "(K^T Diag V^T is defined only when the chunk length equals d_v)",
        check_of([corrected](auto &d) {
          using S = scalar_of<decltype(d)>;
          using std::exp;
          const Gdn<S> g = draw_gdn(d);
          const Truth<S> t(g);
          Mat<S> l(g.chunks.size(), 1), r(g.chunks.size(), 1);
          for (std::size_t i = 0; i < g.chunks.size(); ++i) {
            const Chunk<S> c = chunk_of(g, g.chunks[i]);
            const Mat<S> &dS = t.dhu.dh[i];
            r(i, 0) = Mat<S>(dS.transpose() * t.end_states[i]).trace();
            const Mat<S> KD = c.k.transpose() * Dg(c.gamma, corrected, -1); // K x n
            Mat<S> inner;
            if (corrected)
              inner = KD * chunk_rows(t.fwd.stages.v_new, c); // K x V
            else if (c.n == c.v.cols())
              inner = KD * c.v.transpose(); // K x n, n = V
            else
              return Sides<S>{undefined_product<S>(KD.rows(), c.v.rows()), r};
            l(i, 0) = Mat<S>(dS.transpose() * t.start(i, g.x) + dS.transpose() * inner).trace() *
                      exp(c.gammaC());
          }
          return Sides<S>{l, r};
        }));
    c.gradient = true;
    if (corrected)
      c.correction_of = "003.bwd.step5.dgammaC_expanded";
    out.push_back(c);
  }
  // Step 5: d gamma part 1's first line, the same symbol on both sides, and corrected (the
  // right side the gradient in exp gamma, as the note's last line of the block writes it).
  {
    const auto part1 = [](bool in_exp) {
      return check_of([in_exp](auto &d) {
        using S = scalar_of<decltype(d)>;
        using D = Dual<S>;
        const Gdn<S> g = draw_gdn(d);
        const Truth<S> t(g);
        return per_chunk(g, [&](std::size_t i, const Chunk<S> &c) {
          const Mat<S> dgamma = row_sum<S>(chunk_rows(t.qkw.dg, c)), e = exp_of(c.gamma);
          Mat<S> right = dgamma;
          if (in_exp) {
            const Step5Loss<S> L(g, t, i, c);
            const Mat<D> k = lift(c.k);
            const D eC = lift(e)(c.n - 1, 0);
            right =
                gradient(e, [&](const Mat<D> &x) { return L.output(x, k) + L.state(x, eC, k); });
            right(c.n - 1, 0) += gradient(Mat<S>(e.bottomRows(1)), [&](const Mat<D> &x) {
              return L.state(lift(e), x(0, 0), k);
            })(0, 0);
          }
          return Sides<S>{Mat<S>(right.cwiseProduct(e)), dgamma};
        });
      });
    };
    Claim c = claim(
        "003.bwd.step5.dgamma_part1_exp", bwd_src("Step 5"),
        R"(\delta \boldsymbol{\gamma}_{[t],\text{part1}} &= \delta \boldsymbol{\gamma}_{[t],\text{part1}} \odot \exp\boldsymbol{\gamma}_{[t]})",
        "d gamma_part1 = d gamma_part1 (.) exp gamma, d gamma_part1 the gradient of the output "
        "and state paths in gamma on both sides",
        part1(false));
    c.gradient = true;
    out.push_back(c);
    Claim fixed = correction("003.bwd.step5.dgamma_part1_exp.corrected", c,
                             "d gamma_part1 = d(exp gamma)_part1 (.) exp gamma: the right side "
                             "the exact gradient of the same paths in exp gamma",
                             part1(true));
    fixed.gradient = true;
    out.push_back(fixed);
  }
  // Step 5: d gamma part 1's last line, the three paths' gradients in exp gamma.
  {
    Claim c = claim(
        "003.bwd.step5.dgamma_part1_paths", bwd_src("Step 5"),
        R"(&= \left( \left.\delta \text{Diag}(\exp \boldsymbol{\gamma}_{[t]})\right|_{\text{from } \mathbf{S}_{[t]} \text{w/o} \mathbf{V}_{[t],new}})",
        "d gamma_part1 = (dDiag(e)|_S + dDiag(e)|_O + dDiag(e)|_{gamma^C}) (.) e, e = exp gamma: "
        "the exact gradients in e of the state update (exp gamma^C held), of the output, and in "
        "exp gamma^C of the state update (on the last row)",
        check_of([](auto &d) {
          using S = scalar_of<decltype(d)>;
          using D = Dual<S>;
          const Gdn<S> g = draw_gdn(d);
          const Truth<S> t(g);
          return per_chunk(g, [&](std::size_t i, const Chunk<S> &c) {
            const Step5Loss<S> L(g, t, i, c);
            const Mat<S> e = exp_of(c.gamma);
            const Mat<D> k = lift(c.k);
            const D eC = lift(e)(c.n - 1, 0);
            const Mat<S> from_S = gradient(e, [&](const Mat<D> &x) { return L.state(x, eC, k); });
            const Mat<S> from_O = gradient(e, [&](const Mat<D> &x) { return L.output(x, k); });
            Mat<S> from_C = Mat<S>::Zero(c.n, 1);
            from_C(c.n - 1, 0) = gradient(Mat<S>(e.bottomRows(1)), [&](const Mat<D> &x) {
              return L.state(lift(e), x(0, 0), k);
            })(0, 0);
            return Sides<S>{Mat<S>((from_S + from_O + from_C).cwiseProduct(e)),
                            row_sum<S>(chunk_rows(t.qkw.dg, c))};
          });
        }));
    c.gradient = true;
    out.push_back(c);
  }
  // Step 5: d gamma part 1; the last entry's "d gamma^C exp gamma^C" read two ways.
  {
    Claim c = claim(
        "003.bwd.step5.dgamma_part1", bwd_src("Step 5"),
        R"(&+ [0,0,...,\delta \boldsymbol{\gamma}_{[t]}^C \exp \boldsymbol{\gamma}_{[t]}^C]^\top)",
        "d gamma_part1 = diag((Diag(e) dO S^T) Q^T) - diag(K dK|_S^T) + diag((Diag(e) dB "
        "Diag(e)^-1)(Q K^T)^T) - diag((Diag(e) dB Diag(e)^-1)^T (Q K^T)) + [0, ..., d gamma^C "
        "exp gamma^C], e = exp gamma");
    for (const bool times_exp : {true, false})
      c.readings.push_back(
          {times_exp ? "d gamma^C the log-gradient of the line above, times exp gamma^C again"
                     : "d gamma^C exp gamma^C the log-gradient of the line above",
           times_exp ? "last entry += (Tr(dS^T S_[t-1]) e^C + Tr(dK|_S K^T)) e^C"
                     : "last entry += Tr(dS^T S_[t-1]) e^C + Tr(dK|_S K^T)",
           check_of([times_exp](auto &d) {
             using S = scalar_of<decltype(d)>;
             using std::exp;
             const Gdn<S> g = draw_gdn(d);
             const Truth<S> t(g);
             return per_chunk(g, [&](std::size_t i, const Chunk<S> &c) {
               const Mat<S> &dS = t.dhu.dh[i];
               const Mat<S> vn = chunk_rows(t.fwd.stages.v_new, c), S0 = t.start(i, g.x);
               const Mat<S> dK_S = Dto_end(c) * vn * dS.transpose();
               const Mat<S> D = Dg(c.gamma, true), Di = Dg(c.gamma, true, -1);
               const Mat<S> dB = Mat<S>(c.d_o * vn.transpose()).cwiseProduct(causal_mask<S>(c.n));
               const Mat<S> X = D * dB * Di, QK = c.q * c.k.transpose();
               Mat<S> dg = diag_vec<S>(D * c.d_o * S0.transpose() * c.q.transpose()) -
                           diag_vec<S>(c.k * dK_S.transpose()) + diag_vec<S>(X * QK.transpose()) -
                           diag_vec<S>(X.transpose() * QK);
               const S eC = exp(c.gammaC());
               const S dgC = Mat<S>(dS.transpose() * S0).trace() * eC +
                             Mat<S>(dK_S * c.k.transpose()).trace();
               dg(c.n - 1, 0) += times_exp ? S(dgC * eC) : dgC;
               return Sides<S>{dg, row_sum<S>(chunk_rows(t.qkw.dg, c))};
             });
           })});
    c.gradient = true;
    out.push_back(c);
  }
  return out;
}

/// Step 6's intermediates as the note writes them, from the truth's dW (= qkw.dw) and dU.
template <class S> struct Step6 { Mat<S> AtdW, AtdU, dA, dAx, dK_W, dK_X, G; };
template <class S> Step6<S> step6(const Gdn<S> &g, const Truth<S> &t, std::size_t i) {
  const Chunk<S> c = chunk_of(g, g.chunks[i]);
  const Mat<S> &A = t.fwd.stages.A[i];
  const Mat<S> dW = chunk_rows(t.qkw.dw, c), dU = chunk_rows(t.dhu.dv, c);
  const Mat<S> E = Dg(c.gamma, true), Ei = Dg(c.gamma, true, -1), B = Db(c.beta);
  Step6<S> r;
  r.AtdW = A.transpose() * dW, r.AtdU = A.transpose() * dU;
  r.dK_W = E * B * r.AtdW;
  r.dA = dW * Mat<S>(B * E * c.k).transpose() + dU * Mat<S>(B * c.v).transpose();
  r.dAx = Mat<S>(-E * A.transpose() * r.dA * A.transpose() * Ei)
              .cwiseProduct(causal_mask<S>(c.n, false));
  r.dK_X = B * r.dAx * c.k + Mat<S>(Mat<S>(B * c.k).transpose() * r.dAx).transpose();
  r.G = c.k * c.k.transpose();
  return r;
}

std::vector<Claim> step6_claims() {
  std::vector<Claim> out;
  // Step 6: dK through W<, A held fixed (T, which the note does not define, read as A).
  {
    Claim c = claim(
        "003.bwd.step6.dK_W", bwd_src("Step 6"),
        R"(\left.\delta \mathbf{K}_{[t]}\right|_{\text{from } \overleftarrow{\mathbf{W}_{[t]}} \text{ w/o } \mathbf{T}_{[t]} } &= \text{Diag}(\exp \boldsymbol{\gamma}_{[t]}))",
        "dK|_{W< w/o T} = Diag(exp gamma) Diag(beta) (A^T dW<): T read as A (flash-linear-"
        "attention's name for the stored inverse), held fixed; the exact gradient of <dW<, W<> "
        "in K",
        check_of([](auto &d) {
          using S = scalar_of<decltype(d)>;
          using D = Dual<S>;
          const Gdn<S> g = draw_gdn(d);
          const Truth<S> t(g);
          return per_chunk(g, [&](std::size_t i, const Chunk<S> &c) {
            const Mat<D> A = lift(t.fwd.stages.A[i]), E = lift(Dg(c.gamma, true));
            const Mat<D> B = lift(Db(c.beta)), dW = lift(chunk_rows(t.qkw.dw, c));
            const Mat<S> truth =
                gradient(c.k, [&](const Mat<D> &k) { return inner(dW, Mat<D>(A * E * B * k)); });
            return Sides<S>{step6(g, t, i).dK_W, truth};
          });
        }));
    c.gradient = true;
    out.push_back(c);
  }
  {
    Claim c = claim(
        "003.bwd.step6.dV", bwd_src("Step 6"),
        R"(\delta \mathbf{V}_{[t]} &= \text{Diag}(\boldsymbol{\beta}_{[t]}) \widetilde{\mathbf{A}}_{[t]}^\top \delta \mathbf{U}_{[t]})",
        "dV_[t] = Diag(beta) A^T dU_[t]", check_of([](auto &d) {
          using S = scalar_of<decltype(d)>;
          const Gdn<S> g = draw_gdn(d);
          const Truth<S> t(g);
          return per_chunk(g, [&](std::size_t i, const Chunk<S> &c) {
            return Sides<S>{Db(c.beta) * step6(g, t, i).AtdU, chunk_rows(t.grads.dv, c)};
          });
        }));
    c.gradient = true;
    out.push_back(c);
  }
  // Step 6: dA, the gradient of <dW<, W<> + <dU, U> in A (every entry a variable).
  {
    Claim c = claim(
        "003.bwd.step6.dA", bwd_src("Step 6"),
        R"(\delta \widetilde{\mathbf{A}}_{[t]} &= \delta \overleftarrow{\mathbf{W}_{[t]}} (\text{Diag}(\boldsymbol{\beta}_{[t]} \exp \boldsymbol{\gamma}_{[t]})\mathbf{K}_{[t]})^\top)",
        "dA = dW< (Diag(beta exp gamma) K)^T + dU (Diag(beta) V)^T: the exact gradient of <dW<, "
        "W<> + <dU, U> in A, W< = A Diag(exp gamma) Diag(beta) K, U = A Diag(beta) V",
        check_of([](auto &d) {
          using S = scalar_of<decltype(d)>;
          using D = Dual<S>;
          const Gdn<S> g = draw_gdn(d);
          const Truth<S> t(g);
          return per_chunk(g, [&](std::size_t i, const Chunk<S> &c) {
            const Step6Loss<S> L(t, c);
            const Mat<D> e = lift(exp_of(c.gamma));
            const Mat<S> truth =
                gradient(t.fwd.stages.A[i], [&](const Mat<D> &A) { return L.of(A, e); });
            return Sides<S>{step6(g, t, i).dA, truth};
          });
        }));
    c.gradient = true;
    out.push_back(c);
  }
  // Step 6: dA_x, A_x (which the note does not define) read two ways, each line a claim.
  {
    const auto reading = [](bool gates_out, bool via_KK) {
      return Reading{
          gates_out ? "A_x = Diag(beta)(K K^T (.) M_-1), A0 with its gates taken out" : "A_x = A0",
          gates_out ? "A0 = Diag(exp gamma) A_x Diag(exp gamma)^-1" : "A0 = A_x",
          check_of([gates_out, via_KK](auto &d) {
            using S = scalar_of<decltype(d)>;
            using D = Dual<S>;
            const Gdn<S> g = draw_gdn(d);
            const Truth<S> t(g);
            return per_chunk(g, [&](std::size_t i, const Chunk<S> &c) {
              const Mat<S> truth = dAx_exact(t, i, c, gates_out);
              if (!via_KK)
                return Sides<S>{step6(g, t, i).dAx, truth};
              // Diag(beta)^-1 d(K K^T)|_X: the gradient in G = K K^T through A0.
              const Step6Loss<S> L(t, c);
              const Mat<D> e = lift(exp_of(c.gamma));
              const Mat<S> dG = gradient(Mat<S>(c.k * c.k.transpose()), [&](const Mat<D> &G) {
                return L.of(Step6Loss<S>::inverse_of(L.A0_of(G, e, c.beta)), e);
              });
              return Sides<S>{Mat<S>(Dg(c.beta, false, -1) * dG), truth};
            });
          })};
    };
    Claim ax = claim(
        "003.bwd.step6.dAx", bwd_src("Step 6"),
        R"(\delta \widetilde{\mathbf{A_x}}_{[t]} &= - \text{Diag}(\exp \boldsymbol{\gamma}_{[t]}) \widetilde{\mathbf{A}}_{[t]}^\top \delta \widetilde{\mathbf{A}}_{[t]})",
        "dA_x = -Diag(exp gamma) A^T dA A^T Diag(exp gamma)^-1 (.) M_-1, against the exact "
        "gradient in A_x");
    Claim kk = claim(
        "003.bwd.step6.dAx_from_KKt", bwd_src("Step 6"),
        R"(&= \text{Diag}(\boldsymbol{\beta}_{[t]})^{-1} \left.\delta (\mathbf{K}_{[t]} \mathbf{K}_{[t]}^\top)\right|_{\text{from } \widetilde{\mathbf{X}}_{[t]}})",
        "dA_x = Diag(beta)^-1 d(K K^T)|_X: the exact gradient in G = K K^T through A0 = "
        "Diag(beta)(Diag(exp gamma) G Diag(exp gamma)^-1 (.) M_-1), against the exact gradient "
        "in A_x");
    for (const bool gates_out : {true, false}) {
      ax.readings.push_back(reading(gates_out, false));
      kk.readings.push_back(reading(gates_out, true));
    }
    ax.gradient = kk.gradient = true;
    out.push_back(ax);
    out.push_back(kk);
  }
  {
    Claim c = claim(
        "003.bwd.step6.dK_W_and_X", bwd_src("Step 6"),
        R"(\left.\delta \mathbf{K}_{[t]}\right|_{\text{from } \mathbf{X}_{[t]}} &= \left( \text{Diag}(\boldsymbol{\beta}_{[t]}) \delta \widetilde{\mathbf{A_x}}_{[t]} \right) \mathbf{K}_{[t]})",
        "dK|_W + dK|_X = the gradient of k through W and A: dK|_W = Diag(exp gamma) Diag(beta) "
        "(A^T dW<), dA = dW< (Diag(beta exp gamma) K)^T + dU (Diag(beta) V)^T, dA_x = "
        "-Diag(exp gamma) A^T dA A^T Diag(exp gamma)^-1 (.) M_-1, dK|_X = (Diag(beta) dA_x) K + "
        "((Diag(beta) K)^T dA_x)^T",
        check_of([](auto &d) {
          using S = scalar_of<decltype(d)>;
          const Gdn<S> g = draw_gdn(d);
          const Truth<S> t(g);
          return per_chunk(g, [&](std::size_t i, const Chunk<S> &c) {
            const Step6<S> s = step6(g, t, i);
            return Sides<S>{s.dK_W + s.dK_X, chunk_rows(t.wy.dk, c)};
          });
        }));
    c.gradient = true;
    out.push_back(c);
  }
  for (const bool corrected : {false, true}) {
    Claim c = claim(
        corrected ? "003.bwd.step6.dbeta.corrected" : "003.bwd.step6.dbeta", bwd_src("Step 6"),
        R"(\delta \boldsymbol{\beta}_{[t]} &= \text{diag}\left( \text{Diag}(\boldsymbol{\gamma}_{[t]}) \widetilde{\mathbf{A}}_{[t]}^\top \delta \overleftarrow{\mathbf{W}_{[t]}} \mathbf{K}_{[t]}^\top \right))",
        corrected
            ? "d beta = diag(Diag(exp gamma) A^T dW< K^T) + diag(A^T dU V^T) + diag(dA_x K K^T)"
            : "d beta = diag(Diag(gamma) A^T dW< K^T) + diag(A^T dU V^T) + diag(dA_x K K^T)",
        check_of([corrected](auto &d) {
          using S = scalar_of<decltype(d)>;
          const Gdn<S> g = draw_gdn(d);
          const Truth<S> t(g);
          return per_chunk(g, [&](std::size_t i, const Chunk<S> &c) {
            const Step6<S> s = step6(g, t, i);
            return Sides<S>{diag_vec<S>(Dg(c.gamma, corrected) * s.AtdW * c.k.transpose()) +
                                diag_vec<S>(s.AtdU * c.v.transpose()) + diag_vec<S>(s.dAx * s.G),
                            Mat<S>(t.grads.dbeta.segment(c.s, c.n))};
          });
        }));
    c.gradient = true;
    if (corrected)
      c.correction_of = "003.bwd.step6.dbeta";
    out.push_back(c);
  }
  // Step 6: d gamma part 2's first line, the paths' gradients in exp gamma.
  {
    Claim c = claim(
        "003.bwd.step6.dgamma_part2_paths", bwd_src("Step 6"),
        R"(\delta \boldsymbol{\gamma}_{[t],\text{part2}} &= \text{diag}\left( \left.\delta \text{Diag}(\exp \boldsymbol{\gamma}_{[t]})\right|_{\text{from } \mathbf{U}_{[t]})",
        "d gamma_part2 = diag(dDiag(e)|_{U, W w/o A}) (.) e + diag(dDiag(e)|_A) (.) e, e = exp "
        "gamma: the exact gradients in e of <dW<, W<> + <dU, U> with A held fixed and through A "
        "= (I + A0)^-1 alone",
        check_of([](auto &d) {
          using S = scalar_of<decltype(d)>;
          using D = Dual<S>;
          const Gdn<S> g = draw_gdn(d);
          const Truth<S> t(g);
          return per_chunk(g, [&](std::size_t i, const Chunk<S> &c) {
            const Step6Loss<S> L(t, c);
            const Mat<S> e = exp_of(c.gamma);
            const Mat<D> A = lift(t.fwd.stages.A[i]), G = lift(Mat<S>(c.k * c.k.transpose()));
            const Mat<S> from_W = gradient(e, [&](const Mat<D> &x) { return L.of(A, x); });
            const Mat<S> from_A = gradient(e, [&](const Mat<D> &x) {
              return L.of(Step6Loss<S>::inverse_of(L.A0_of(G, x, c.beta)), lift(e));
            });
            return Sides<S>{Mat<S>((from_W + from_A).cwiseProduct(e)),
                            row_sum<S>(chunk_rows(t.wy.dg, c))};
          });
        }));
    c.gradient = true;
    out.push_back(c);
  }
  for (const bool corrected : {false, true}) {
    Claim c = claim(
        corrected ? "003.bwd.step6.dgamma_part2.corrected" : "003.bwd.step6.dgamma_part2",
        bwd_src("Step 6"),
        R"(\left( \mathbf{K}_{[t]} \text{Diag}(\boldsymbol{\beta}_{[t]}) \text{Diag}(\boldsymbol{\gamma}_{[t]}) \right)^\top \right))",
        corrected ? "d gamma_part2 = diag(A^T dW< (Diag(beta) Diag(exp gamma) K)^T) + diag(dA_x "
                    "(Diag(beta) K K^T)^T) - diag((Diag(beta) K K^T)^T dA_x)"
                  : "d gamma_part2 = diag(A^T dW< (K Diag(beta) Diag(gamma))^T) + diag(dA_x "
                    "(Diag(beta) K K^T)^T) - diag((Diag(beta) K K^T)^T dA_x) (K Diag(beta) is "
                    "defined only when d_k equals the chunk length)",
        check_of([corrected](auto &d) {
          using S = scalar_of<decltype(d)>;
          const Gdn<S> g = draw_gdn(d);
          const Truth<S> t(g);
          std::vector<Mat<S>> l, r;
          for (std::size_t i = 0; i < g.chunks.size(); ++i) {
            const Chunk<S> c = chunk_of(g, g.chunks[i]);
            const Step6<S> s = step6(g, t, i);
            r.push_back(row_sum<S>(chunk_rows(t.wy.dg, c)));
            Mat<S> scaled_k;
            if (corrected)
              scaled_k = Db(c.beta) * Dg(c.gamma, true) * c.k;
            else if (c.k.cols() == c.n)
              scaled_k = c.k * Db(c.beta) * Dg(c.gamma, false);
            else
              return Sides<S>{undefined_product<S>(c.n, c.n), stack(r)};
            const Mat<S> BG = Db(c.beta) * s.G;
            l.push_back(diag_vec<S>(s.AtdW * scaled_k.transpose()) +
                        diag_vec<S>(s.dAx * BG.transpose()) - diag_vec<S>(BG.transpose() * s.dAx));
          }
          return sides_of(l, r);
        }));
    c.gradient = true;
    if (corrected)
      c.correction_of = "003.bwd.step6.dgamma_part2";
    out.push_back(c);
  }
  {
    Claim c = claim(
        "003.bwd.step7.dlog_alpha", bwd_src("Step 7"),
        R"(\delta \log \boldsymbol{\alpha}_{[t]} &= \text{suffix\_cumsum}(\delta\mathbf{\gamma}_{[t]}))",
        "d log alpha_[t] = suffix_cumsum(d gamma_part1 + d gamma_part2) inside each chunk",
        check_of([](auto &d) {
          using S = scalar_of<decltype(d)>;
          const Gdn<S> g = draw_gdn(d);
          const Truth<S> t(g);
          return per_chunk(g, [&](std::size_t, const Chunk<S> &c) {
            const Mat<S> dgamma =
                row_sum<S>(chunk_rows(t.qkw.dg, c)) + row_sum<S>(chunk_rows(t.wy.dg, c));
            Mat<S> suffix = dgamma;
            for (Eigen::Index k = c.n - 1; k-- > 0;)
              suffix(k, 0) += suffix(k + 1, 0);
            return Sides<S>{suffix, row_sum<S>(chunk_rows(t.grads.dg, c))};
          });
        }));
    c.gradient = true;
    out.push_back(c);
  }
  return out;
}

} // namespace

std::vector<Claim> seed_003_claims() {
  std::vector<Claim> out = forward_claims();
  for (Claim &c : backward_claims())
    out.push_back(std::move(c));
  for (Claim &c : step6_claims())
    out.push_back(std::move(c));
  return out;
}

} // namespace ruleproof::proofs::notes
