// ruleproof: the claims of seed 003 (Gated DeltaNet in flash-linear-attention: chunkwise
// forward steps 1-5, backward steps 1-7). The truth is the reference: kda's recurrence (the
// states and the output), its chunkwise stages (A0, A, w, u, h, v_new) and its analytic chunk
// backward stage by stage (dv_local, dhu, dqkwg, wy), the scalar gate repeated over the keys
// as gated_delta_rule does (a gradient of the gate is summed over the keys).
#include "claims.hpp"
#include "common.hpp"
#include "reference/gated_delta_rule/gated_delta_rule.hpp"

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
