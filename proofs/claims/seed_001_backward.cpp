// ruleproof: the claims of seed 001's backward (the gated DPLR chunkwise backward) and of its
// discussions (the reduction to KDA, DPLR without explicit gating); its forward's are
// seed_001.cpp's, whose header says what the truth is.
#include "claims.hpp"
#include "reference/kda/chunk.hpp"
#include "reference/kda/recurrent.hpp"
#include "seed_001_support.hpp"

namespace ruleproof::proofs::notes {
namespace {

using namespace seed001;

/// \brief A KDA head (q, k, v', g, beta, S_0) and the note's DPLR head for it: a_t = k_t,
/// b_t = beta_t k_t, v_t = beta_t v'_t; kda's chunkwise stages (A, w, u, h, v_new).
template <class S> struct KdaCase {
  Head<S> kda;
  Dplr<S> p;
  kda::ChunkStages<S> st;
  Mat<S> beta(const Chunk<S> &c) const {
    return Mat<S>(Vec<S>(kda.beta.segment(c.s, c.n)).asDiagonal());
  }
};
template <class S> KdaCase<S> draw_kda(Draw<S> &d) {
  KdaCase<S> r;
  r.kda = draw_head(d, d.sizes.K, true, true);
  r.p.x = r.kda;
  r.p.x.a = r.kda.k;
  r.p.x.b = r.kda.beta.asDiagonal() * r.kda.k;
  r.p.x.v = r.kda.beta.asDiagonal() * r.kda.v;
  r.p.x.beta = Vec<S>();
  r.p.d_o = Mat<S>::Zero(r.kda.v.rows(), r.kda.v.cols());
  r.p.d_ht = Mat<S>::Zero(r.kda.k.cols(), r.kda.v.cols());
  r.p.C = d.sizes.C;
  r.p.chunks = chunks_of(r.kda, r.p.C);
  r.st = kda::chunk_forward_head(r.kda, S(1), r.p.C, GateKind::key).stages;
  return r;
}

/// Each row's cumulative gates within its chunk (the rows of every chunk's Gamma, stacked).
template <class S> Mat<S> stacked_Gamma(const Dplr<S> &p, const Truth<S> &t) {
  Mat<S> Gamma(p.x.q.rows(), p.x.q.cols());
  for (std::size_t i = 0; i < p.chunks.size(); ++i) {
    const Chunk<S> c = chunk_of(p, t, i);
    Gamma.middleRows(c.s, c.n) = c.Gamma;
  }
  return Gamma;
}

/// \brief The exact gradient with respect to an arrowed input: X<- = X . Gamma (`left`) or
/// X-> = X / Gamma, Gamma each chunk's cumulative gates; dual numbers through the recurrence
/// with the arrowed matrix as the input (X = X<- / Gamma, or X-> . Gamma).
template <class S, class Field>
Mat<S> arrow_gradient(const Dplr<S> &p, const Truth<S> &t, Field field, bool left) {
  using D = Dual<S>;
  const Mat<S> Gamma = stacked_Gamma(p, t);
  const Head<D> x = lift(p.x);
  const Mat<D> d_o = lift(p.d_o), d_ht = lift(p.d_ht), G = lift(Gamma);
  const Mat<S> arrowed =
      left ? Mat<S>(field(p.x).cwiseProduct(Gamma)) : Mat<S>(field(p.x).cwiseQuotient(Gamma));
  return gradient(arrowed, [&](const Mat<D> &X) {
    Head<D> y = x;
    field(y) = left ? Mat<D>(X.cwiseQuotient(G)) : Mat<D>(X.cwiseProduct(G));
    const HeadOutput<D> out = recurrence(y, Parameterisation::seed);
    return D(inner(out.o, d_o) + inner(out.ht, d_ht));
  });
}

/// A gradient's "dX = dX-arrow . Gamma" (or "/ Gamma") line: the exact gradient of the
/// arrowed input, scaled as the note says, against the exact gradient of X.
template <class Field> Check from_arrow(Field field, bool left, bool multiply) {
  return check_of([field, left, multiply](auto &d) {
    using S = scalar_of<decltype(d)>;
    const Backward<S> bw(d);
    const Mat<S> Gamma = stacked_Gamma(bw.p, bw.t);
    const Mat<S> arrowed = arrow_gradient(bw.p, bw.t, field, left);
    return Sides<S>{multiply ? Mat<S>(arrowed.cwiseProduct(Gamma))
                             : Mat<S>(arrowed.cwiseQuotient(Gamma)),
                    input_gradient(bw.p, field)};
  });
}

// ---- Gated DPLR Backward ----

std::vector<Claim> key_result_claims() {
  std::vector<Claim> out;
  out.push_back(claim(
      "001.bwd.key_results", backward_src("Key results for forward"), R"(Key results for forward)",
      "the key results chained chunk after chunk from the initial state: F = I + (B<- A->^T . "
      "M_-1), E = F^-1, W = E B<-, C = -E (B<- K->^T . M_-1) V, V_1 = V, V_2 = C - W S^T, then "
      "S^C_[t] and O_[t]: every O_[t] and the final state equal the recurrence's",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const Dplr<S> p = draw_dplr(d, true);
        const Truth<S> t(p);
        Mat<S> state = p.x.h0.transpose(), O(p.x.q.rows(), p.x.v.cols());
        for (std::size_t i = 0; i < p.chunks.size(); ++i) {
          const Chunk<S> c = chunk_of(p, t, i);
          const Mat<S> B_left = c.left(c.B), Q_left = c.left(c.Q);
          const Mat<S> K_right = c.right(c.K), A_right = c.right(c.A);
          const Mat<S> F = c.I() + scores(B_left, A_right, c.M_1);
          const Mat<S> E = inverse(F);
          const Mat<S> W = E * B_left, C = -E * scores(B_left, K_right, c.M_1) * c.V;
          const Mat<S> V1 = c.V, V2 = C - W * state.transpose();
          O.middleRows(c.s, c.n) = Q_left * state.transpose() + scores(Q_left, K_right, c.M) * V1 +
                                   scores(Q_left, A_right, c.M) * V2;
          state = Mat<S>(state * c.DgammaC() + V1.transpose() * K_right * c.DgammaC() +
                         V2.transpose() * A_right * c.DgammaC());
        }
        return flat_sides<S>({O, state}, {t.o, t.states.back()});
      })));
  // The key results' rows, each a claim; S^C and O again, verbatim, under DPLR without
  // explicit gating (the quote's second place there).
  out.push_back(claim(
      "001.bwd.key_W", backward_src("Key results for forward"),
      R"(\mathbf{W}_{[t]} &= \mathbf{E}_{[t]} \overleftarrow{\mathbf{B}_{[t]}})",
      "W_[t] = E B<- (E the reference's), against the reference's w", check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const Dplr<S> p = draw_dplr(d);
        const Truth<S> t(p);
        return per_chunk(p, t, [&](const Chunk<S> &c) { return Sides<S>{c.E * c.left(c.B), c.W}; });
      })));
  out.push_back(claim(
      "001.bwd.key_C", backward_src("Key results for forward"),
      R"(\mathbf{C}_{[t]} = - \mathbf{E}_{[t]} \left( \overleftarrow{\mathbf{B}_{[t]}} \overrightarrow{\mathbf{K}_{[t]}}^\top \odot \mathbf{M}_{-1} \right) \mathbf{V}_{[t]})",
      "C_[t] = -E (B<- K->^T . M_-1) V (E the reference's), against the reference's c",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const Dplr<S> p = draw_dplr(d);
        const Truth<S> t(p);
        return per_chunk(p, t, [&](const Chunk<S> &c) {
          return Sides<S>{Mat<S>(-c.E * scores(c.left(c.B), c.right(c.K), c.M_1) * c.V), c.C};
        });
      })));
  const auto state_and_output = [](Parameterisation form, bool output) {
    return check_of([form, output](auto &d) {
      using S = scalar_of<decltype(d)>;
      const Dplr<S> p = draw_dplr(d, true);
      const Truth<S> t(p, form);
      return per_chunk(p, t, [&](const Chunk<S> &c) {
        const Mat<S> V1 = c.V, V2 = c.V2(), K_right = c.right(c.K), A_right = c.right(c.A);
        if (output) {
          const Mat<S> Q_left = c.left(c.Q);
          return Sides<S>{Q_left * c.S0.transpose() + scores(Q_left, K_right, c.M) * V1 +
                              scores(Q_left, A_right, c.M) * V2,
                          Mat<S>(t.o.middleRows(c.s, c.n))};
        }
        return Sides<S>{c.S0 * c.DgammaC() + V1.transpose() * K_right * c.DgammaC() +
                            V2.transpose() * A_right * c.DgammaC(),
                        c.S1};
      });
    });
  };
  for (const int place : {1, 2}) {
    const Parameterisation form = place == 1 ? Parameterisation::seed : Parameterisation::no_gate;
    const Source src = place == 1 ? backward_src("Key results for forward") : no_gate_src;
    const std::string prefix = place == 1 ? "001.bwd.key_" : "001.nogate.";
    const std::string under =
        place == 1 ? "" : " (DPLR without explicit gating: b = Diag(alpha)^-1 d)";
    Claim S_C = claim(
        prefix + "S", src,
        R"(\mathbf{S}_{[t]}^C &= \mathbf{S}_{[t-1]}^C \text{Diag}(\boldsymbol{\gamma}_{[t]}^C) + \mathbf{V}_{[t],1}^\top \overrightarrow{\mathbf{K}_{[t]}} \text{Diag}(\boldsymbol{\gamma}_{[t]}^C))",
        "S^C_[t] = S^C_[t-1] Diag(gamma^C) + V_1^T K-> Diag(gamma^C) + V_2^T A-> Diag(gamma^C), "
        "V_1 = V, V_2 = C - W S^C_[t-1]^T (W, C the reference's), against the recurrence" +
            under,
        state_and_output(form, false));
    S_C.occurrence = place;
    out.push_back(S_C);
    Claim O = claim(
        prefix + "O", src,
        R"(\mathbf{S}_{[t-1]}^{C\top} + \left( \overleftarrow{\mathbf{Q}_{[t]}} \overrightarrow{\mathbf{K}_{[t]}}^\top \odot \mathbf{M} \right) \mathbf{V}_{[t],1})",
        "O_[t] = Q<- S^C_[t-1]^T + (Q<- K->^T . M) V_1 + (Q<- A->^T . M) V_2, M_ij = 1 for i >= "
        "j (M_-1 = M - I), against the recurrence" +
            under,
        state_and_output(form, true));
    O.occurrence = place;
    out.push_back(O);
  }
  return out;
}

std::vector<Claim> wy_gradient_claims() {
  std::vector<Claim> out;
  out.push_back(gradient_claim(claim(
      "001.bwd.dC", backward_src("For dC, dV_1, dW"),
      R"(\delta \mathbf{C}_{[t]} &= \delta \mathbf{V}_{[t],2} = \overrightarrow{\mathbf{A}_{[t]}} \text{Diag}(\boldsymbol{\gamma}_{[t]}^C) \delta \mathbf{S}_{[t]}^{C \top})",
      "dC_[t] = dV_[t],2 = A-> Diag(gamma^C) dS^C_[t]^T + (Q<- A->^T . M)^T dO_[t], against the "
      "exact gradient with respect to the reference's c",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const Backward<S> bw(d);
        const auto &p = bw.p;
        const auto &t = bw.t;
        const auto &f = bw.f;
        const ChunkGradients<S> g(p, t, f);
        return per_chunk(p, t, [&](const Chunk<S> &c) {
          const Mat<S> &dS = g.after(c);
          return Sides<S>{c.right(c.A) * c.DgammaC() * dS.transpose() +
                              scores(c.left(c.Q), c.right(c.A), c.M).transpose() * c.dO,
                          g.rows(g.dC, c)};
        });
      }))));
  out.push_back(gradient_claim(claim(
      "001.bwd.dV1", backward_src("For dC, dV_1, dW"),
      R"(\delta \mathbf{V}_{[t],1} & = \overrightarrow{\mathbf{K}_{[t]}} \text{Diag}(\boldsymbol{\gamma}_{[t]}^C) \delta \mathbf{S}_{[t]}^{C \top})",
      "dV_[t],1 = K-> Diag(gamma^C) dS^C_[t]^T + (Q<- K->^T . M)^T dO_[t], against the exact "
      "gradient with respect to V as it enters the state and the output (not C)",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const Backward<S> bw(d);
        const auto &p = bw.p;
        const auto &t = bw.t;
        const auto &f = bw.f;
        const ChunkGradients<S> g(p, t, f);
        return per_chunk(p, t, [&](const Chunk<S> &c) {
          const Mat<S> &dS = g.after(c);
          return Sides<S>{c.right(c.K) * c.DgammaC() * dS.transpose() +
                              scores(c.left(c.Q), c.right(c.K), c.M).transpose() * c.dO,
                          g.rows(g.dV1, c)};
        });
      }))));
  for (const bool corrected : {false, true}) {
    Claim c = gradient_claim(claim(
        corrected ? "001.bwd.dW.corrected" : "001.bwd.dW", backward_src("For dC, dV_1, dW"),
        R"(\delta \mathbf{W}_{[t]} &= - \delta \mathbf{C}_{[t]} \mathbf{S}_{[t]}^{C})",
        corrected ? "dW_[t] = -dC_[t] S^C_[t-1] (the state before the chunk, which V_2 = C - W "
                    "S^C_[t-1]^T reads)"
                  : "dW_[t] = -dC_[t] S^C_[t] (the state after the chunk), dC the exact gradient",
        check_of([corrected](auto &d) {
          using S = scalar_of<decltype(d)>;
          const Backward<S> bw(d);
          const auto &p = bw.p;
          const auto &t = bw.t;
          const auto &f = bw.f;
          const ChunkGradients<S> g(p, t, f);
          return per_chunk(p, t, [&](const Chunk<S> &c) {
            return Sides<S>{Mat<S>(-g.rows(g.dC, c) * (corrected ? c.S0 : c.S1)), g.rows(g.dW, c)};
          });
        })));
    if (corrected)
      c.correction_of = "001.bwd.dW";
    out.push_back(c);
  }
  out.push_back(gradient_claim(claim(
      "001.bwd.dE", backward_src("For dE, dF"),
      R"(\delta \mathbf{E}_{[t]} &= - \delta \mathbf{C}_{[t]} \mathbf{V}_{[t]}^\top)",
      "dE_[t] = -dC V^T (B<- K->^T . M_-1)^T + dW B<-^T (dC, dW the exact gradients), against "
      "the exact gradient with respect to every entry of E",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const Backward<S> bw(d);
        const auto &p = bw.p;
        const auto &t = bw.t;
        const auto &f = bw.f;
        const ChunkGradients<S> g(p, t, f);
        return per_chunk(p, t, [&](const Chunk<S> &c) {
          const Mat<S> B_left = c.left(c.B);
          return Sides<S>{-g.rows(g.dC, c) * c.V.transpose() *
                                  scores(B_left, c.right(c.K), c.M_1).transpose() +
                              g.rows(g.dW, c) * B_left.transpose(),
                          gradient_E(f, t, c.index)};
        });
      }))));
  // Two chunks of two rows: the degree the exact arithmetic tracks for -E^T dE E^T, a sum of
  // n^2 products of exact gradients, grows fast with n, and with it the Schwartz-Zippel bound.
  Claim dF = gradient_claim(claim(
      "001.bwd.dF", backward_src("For dE, dF"),
      R"(\delta \mathbf{F}_{[t]} &= - \mathbf{E}_{[t]}^\top \delta \mathbf{E}_{[t]} \mathbf{E}_{[t]}^\top)",
      "dF_[t] = -E^T dE E^T (dE the exact gradient), against the exact gradient with respect to "
      "every entry of F, E = F^-1",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const Backward<S> bw(d);
        const auto &p = bw.p;
        const auto &t = bw.t;
        const auto &f = bw.f;
        return per_chunk(p, t, [&](const Chunk<S> &c) {
          return Sides<S>{Mat<S>(-c.E.transpose() * gradient_E(f, t, c.index) * c.E.transpose()),
                          gradient_F(f, t, c.index)};
        });
      })));
  dF.sizes = {4, 2, 2, 2};
  out.push_back(dF);
  const Check dS_check = check_of([](auto &d) {
    using S = scalar_of<decltype(d)>;
    const Backward<S> bw(d);
    const ChunkGradients<S> g(bw.p, bw.t, bw.f);
    return per_chunk(bw.p, bw.t, [&](const Chunk<S> &c) {
      return Sides<S>{Mat<S>(-g.rows(g.dC, c).transpose() * c.W + g.after(c) * c.DgammaC() +
                             c.dO.transpose() * c.left(c.Q)),
                      g.before(c)};
    });
  });
  out.push_back(gradient_claim(claim(
      "001.bwd.dS_next", backward_src("For dS^C"),
      R"(\Rightarrow \delta \mathbf{S}_{[t]}^{C} &= \delta \mathbf{S}_{[t+1]}^{C} \text{Diag}(\boldsymbol{\gamma}_{[t+1]}^C))",
      "dS^C_[t] = dS^C_[t+1] Diag(gamma^C_[t+1]) + dO_[t+1]^T Q<-_[t+1] - dC_[t+1]^T W_[t+1]: "
      "the line above at t + 1, for every chunk after the first (dC, dS^C_[t+1] exact)",
      dS_check)));
  out.push_back(gradient_claim(claim(
      "001.bwd.dS", backward_src("For dS^C"),
      R"(\delta \mathbf{S}_{[t-1]}^{C} &= -\delta \mathbf{C}_{[t]}^\top \mathbf{W}_{[t]} + \delta \mathbf{S}_{[t]}^{C} \text{Diag}(\boldsymbol{\gamma}_{[t]}^C))",
      "dS^C_[t-1] = -dC_[t]^T W_[t] + dS^C_[t] Diag(gamma^C_[t]) + dO_[t]^T Q<-_[t], for every "
      "chunk down to the initial state; dC, dS^C_[t] exact",
      dS_check)));
  return out;
}

std::vector<Claim> input_gradient_claims() {
  std::vector<Claim> out;
  out.push_back(gradient_claim(claim(
      "001.bwd.dQ", backward_src("For dQ"),
      R"(\delta \overleftarrow{\mathbf{Q}_{[t]}} &= \delta \mathbf{O}_{[t]} \mathbf{S}_{[t-1]}^C)",
      "dQ<- = dO S^C_[t-1] + (dO V_1^T . M) K-> + (dO V_2^T . M) A->, against the exact "
      "gradient with respect to Q<- = Q . Gamma",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const Backward<S> bw(d);
        const auto &p = bw.p;
        const auto &t = bw.t;
        const Mat<S> dq_left = arrow_gradient(p, t, field_q, true);
        return per_chunk(p, t, [&](const Chunk<S> &c) {
          return Sides<S>{dQ_left(c), Mat<S>(dq_left.middleRows(c.s, c.n))};
        });
      }))));
  out.push_back(gradient_claim(claim(
      "001.bwd.dQ_from_arrow", backward_src("For dQ"),
      R"(\delta \mathbf{Q}_{[t]} &= \delta \overleftarrow{\mathbf{Q}_{[t]}} \odot \mathbf{\Gamma}_{[t]})",
      "dQ = dQ<- . Gamma (dQ<- exact), against the exact gradient of q",
      from_arrow(field_q, true, true))));
  // dB<- = E^T dW - (E^T dC V^T . M_-1) K-> + (dF . M_-1) A->.
  out.push_back(gradient_claim(claim(
      "001.bwd.dB_left", backward_src("For dB"),
      R"(\delta \overleftarrow{\mathbf{B}_{[t]}} &= \mathbf{E}_{[t]}^\top \delta \mathbf{W}_{[t]})",
      "dB<- = E^T dW - (E^T dC V^T . M_-1) K-> + (dF . M_-1) A-> (dW, dC, dF exact), against "
      "the exact gradient with respect to B<- = B . Gamma",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const Backward<S> bw(d);
        const ChunkGradients<S> g(bw.p, bw.t, bw.f);
        const Mat<S> db_left = arrow_gradient(bw.p, bw.t, field_b, true);
        return per_chunk(bw.p, bw.t, [&](const Chunk<S> &c) {
          return Sides<S>{
              dB_left(c, g.rows(g.dW, c), g.rows(g.dC, c), gradient_F(bw.f, bw.t, c.index)),
              Mat<S>(db_left.middleRows(c.s, c.n))};
        });
      }))));
  // "dB = dQ<- . Gamma" under "For dB": the symbol on its right is another gradient's.
  {
    Claim c = claim(
        "001.bwd.dB", backward_src("For dB"),
        R"(\delta \mathbf{B}_{[t]} &= \delta \overleftarrow{\mathbf{Q}_{[t]}} \odot \mathbf{\Gamma}_{[t]})",
        "dB = dQ<- . Gamma (the arrowed gradient exact), against the exact gradient of b");
    for (const bool literal : {true, false})
      c.readings.push_back(
          {literal ? "dQ<- as written (the gradient of Q<-)" : "dQ<- a slip for dB<-",
           literal ? "dB = dQ<- . Gamma, dQ<- the exact gradient with respect to Q<-"
                   : "dB = dB<- . Gamma, dB<- the exact gradient with respect to B<-",
           check_of([literal](auto &d) {
             using S = scalar_of<decltype(d)>;
             const Backward<S> bw(d);
             const Mat<S> Gamma = stacked_Gamma(bw.p, bw.t);
             const Mat<S> arrowed = literal ? arrow_gradient(bw.p, bw.t, field_q, true)
                                            : arrow_gradient(bw.p, bw.t, field_b, true);
             return Sides<S>{Mat<S>(arrowed.cwiseProduct(Gamma)), input_gradient(bw.p, field_b)};
           })});
    out.push_back(c);
  }
  // dK and dA: the terms through the state update S^C_[t] are missing.
  for (const bool corrected : {false, true}) {
    Claim c = gradient_claim(claim(
        corrected ? "001.bwd.dK.corrected" : "001.bwd.dK", backward_src("For dK"),
        R"(\delta \overrightarrow{\mathbf{K}_{[t]}} &= \left(\delta \mathbf{O}_{[t]} \mathbf{V}_{[t],1}^\top \odot \mathbf{M}\right)^\top \overleftarrow{\mathbf{Q}_{[t]}})",
        std::string("dK-> = (dO V_1^T . M)^T Q<- - (E^T dC V^T . M_-1)^T B<-") +
            (corrected ? " + V_1 dS^C_[t] Diag(gamma^C) (through S^C_[t])" : "") +
            " (dC, dS exact), against the exact gradient with respect to K-> = K / Gamma",
        check_of([corrected](auto &d) {
          using S = scalar_of<decltype(d)>;
          const Backward<S> bw(d);
          const auto &p = bw.p;
          const auto &t = bw.t;
          const auto &f = bw.f;
          const ChunkGradients<S> g(p, t, f);
          const Mat<S> dk = arrow_gradient(p, t, field_k, false);
          return per_chunk(p, t, [&](const Chunk<S> &c) {
            Mat<S> dK_right =
                scores(c.dO, c.V, c.M).transpose() * c.left(c.Q) -
                scores(Mat<S>(c.E.transpose() * g.rows(g.dC, c)), c.V, c.M_1).transpose() *
                    c.left(c.B);
            if (corrected)
              dK_right += c.V * g.after(c) * c.DgammaC();
            return Sides<S>{dK_right, Mat<S>(dk.middleRows(c.s, c.n))};
          });
        })));
    if (corrected)
      c.correction_of = "001.bwd.dK";
    out.push_back(c);
  }
  for (const bool corrected : {false, true}) {
    Claim c = gradient_claim(claim(
        corrected ? "001.bwd.dA.corrected" : "001.bwd.dA", backward_src("For dA"),
        R"(\delta \overrightarrow{\mathbf{A}_{[t]}} &= \left(\delta \mathbf{O}_{[t]} \mathbf{V}_{[t],2}^\top \odot \mathbf{M}\right)^\top \overleftarrow{\mathbf{Q}_{[t]}})",
        std::string("dA-> = (dO V_2^T . M)^T Q<- + (dF . M_-1)^T B<-") +
            (corrected ? " + V_2 dS^C_[t] Diag(gamma^C) (through S^C_[t])" : "") +
            " (dF, dS exact), against the exact gradient with respect to A-> = A / Gamma",
        check_of([corrected](auto &d) {
          using S = scalar_of<decltype(d)>;
          const Backward<S> bw(d);
          const auto &p = bw.p;
          const auto &t = bw.t;
          const auto &f = bw.f;
          const ChunkGradients<S> g(p, t, f);
          const Mat<S> da = arrow_gradient(p, t, field_a, false);
          return per_chunk(p, t, [&](const Chunk<S> &c) {
            const Mat<S> dF = gradient_F(f, t, c.index);
            Mat<S> dA_right = scores(c.dO, c.V2(), c.M).transpose() * c.left(c.Q) +
                              Mat<S>(dF.cwiseProduct(c.M_1)).transpose() * c.left(c.B);
            if (corrected)
              dA_right += c.V2() * g.after(c) * c.DgammaC();
            return Sides<S>{dA_right, Mat<S>(da.middleRows(c.s, c.n))};
          });
        })));
    if (corrected)
      c.correction_of = "001.bwd.dA";
    out.push_back(c);
  }
  out.push_back(gradient_claim(claim(
      "001.bwd.dK_from_arrow", backward_src("For dK"),
      R"(\delta \mathbf{K}_{[t]} &= \delta \overrightarrow{\mathbf{K}_{[t]}} \oslash \mathbf{\Gamma}_{[t]})",
      "dK = dK-> / Gamma (dK-> exact), against the exact gradient of k",
      from_arrow(field_k, false, false))));
  out.push_back(gradient_claim(claim(
      "001.bwd.dA_from_arrow", backward_src("For dA"),
      R"(\delta \mathbf{A}_{[t]} &= \delta \overrightarrow{\mathbf{A}_{[t]}} \oslash \mathbf{\Gamma}_{[t]})",
      "dA = dA-> / Gamma (dA-> exact), against the exact gradient of a",
      from_arrow(field_a, false, false))));
  out.push_back(gradient_claim(claim(
      "001.bwd.dV", backward_src("For dV"),
      R"(\delta \mathbf{V}_{[t]} = \delta \mathbf{V}_{[t],1} - \left()",
      "dV = dV_1 - (B<- K->^T . M_-1)^T E^T dC (dV_1, dC exact), against the exact gradient of v",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const Backward<S> bw(d);
        const auto &p = bw.p;
        const auto &t = bw.t;
        const auto &f = bw.f;
        const ChunkGradients<S> g(p, t, f);
        const Mat<S> dv = input_gradient(p, field_v);
        return per_chunk(p, t, [&](const Chunk<S> &c) {
          return Sides<S>{g.rows(g.dV1, c) - scores(c.left(c.B), c.right(c.K), c.M_1).transpose() *
                                                 c.E.transpose() * g.rows(g.dC, c),
                          Mat<S>(dv.middleRows(c.s, c.n))};
        });
      }))));
  return out;
}

std::vector<Claim> gate_gradient_claims() {
  std::vector<Claim> out;
  out.push_back(gradient_claim(claim(
      "001.bwd.dgammaC", backward_src("For dGamma"),
      R"(\delta \boldsymbol{\gamma}_{[t]}^C &= \text{diag}\left( \left( \mathbf{S}_{[t-1]}^C + \mathbf{V}_{[t],1}^\top)",
      "d gamma^C_[t] (the extra Diag(gamma^C) of S^C_[t]) = diag((S^C_[t-1] + V_1^T K-> + "
      "V_2^T A->)^T dS^C_[t]) = (gamma^C)^-1 . diag(S^C_[t]^T dS^C_[t]) (dS exact), against the "
      "exact derivative of the loss with respect to that factor",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const Dplr<S> p = draw_dplr(d, true);
        const Truth<S> t(p);
        return per_chunk(p, t, [&](const Chunk<S> &c) {
          const Mat<S> dS = state_gradient(p, t, c.s + c.n);
          const Mat<S> X =
              c.S0 + c.V.transpose() * c.right(c.K) + c.V2().transpose() * c.right(c.A);
          const Mat<S> truth = extra_gammaC_gradient(p, c);
          return sides_of<S>(
              {diag_row(Mat<S>(X.transpose() * dS)),
               c.gammaC().cwiseInverse().cwiseProduct(diag_row(Mat<S>(c.S1.transpose() * dS)))},
              {truth, truth});
        });
      }))));
  out.push_back(gradient_claim(claim(
      "001.bwd.dGamma_wo_extra", backward_src("For dGamma"),
      R"(\left.\delta \mathbf{\Gamma}_{[t]}\right|_{\text{w/o extra} \boldsymbol{\gamma}_{[t]}^C} &= \delta \overleftarrow{\mathbf{Q}_{[t]}} \odot \mathbf{Q}_{[t]})",
      "dGamma|_{w/o extra gamma^C} = dQ<- . Q + dB<- . B - dK-> . K / Gamma / Gamma - dA-> . A "
      "/ Gamma / Gamma (the arrowed gradients exact), against the exact dGamma = d log Gamma / "
      "Gamma less the extra gamma^C's derivative on the last row",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const Dplr<S> p = draw_dplr(d, true);
        const Truth<S> t(p);
        const InputGradients<S> grad(p);
        return per_chunk(p, t, [&](const Chunk<S> &c) {
          const Mat<S> dQ = grad.rows(grad.dq, c), dB = grad.rows(grad.db, c);
          const Mat<S> dK = grad.rows(grad.dk, c), dA = grad.rows(grad.da, c);
          const Mat<S> Gamma2 = c.Gamma.cwiseProduct(c.Gamma);
          const Mat<S> note = c.right(dQ).cwiseProduct(c.Q) + c.right(dB).cwiseProduct(c.B) -
                              c.left(dK).cwiseProduct(c.K).cwiseQuotient(Gamma2) -
                              c.left(dA).cwiseProduct(c.A).cwiseQuotient(Gamma2);
          const Mat<S> truth = dlog_Gamma(grad.dg, c).cwiseQuotient(c.Gamma) -
                               on_last_row(c, extra_gammaC_gradient(p, c));
          return Sides<S>{note, truth};
        });
      }))));
  // d log Gamma, line by line: the exact gradient of the gates is the truth of both.
  const auto dlog_Gamma_line = [](bool products) {
    return check_of([products](auto &d) {
      using S = scalar_of<decltype(d)>;
      const Dplr<S> p = draw_dplr(d, true);
      const Truth<S> t(p);
      const InputGradients<S> grad(p);
      return per_chunk(p, t, [&](const Chunk<S> &c) {
        const Mat<S> dQ = grad.rows(grad.dq, c), dB = grad.rows(grad.db, c);
        const Mat<S> dK = grad.rows(grad.dk, c), dA = grad.rows(grad.da, c);
        const Mat<S> dS = state_gradient(p, t, c.s + c.n);
        const Mat<S> state_term = diag_row(Mat<S>(c.S1.transpose() * dS));
        if (products)
          return Sides<S>{dQ.cwiseProduct(c.Q) + dB.cwiseProduct(c.B) - dK.cwiseProduct(c.K) -
                              dA.cwiseProduct(c.A) + on_last_row(c, state_term),
                          dlog_Gamma(grad.dg, c)};
        const Mat<S> Gamma2 = c.Gamma.cwiseProduct(c.Gamma);
        const Mat<S> dGamma =
            c.right(dQ).cwiseProduct(c.Q) + c.right(dB).cwiseProduct(c.B) -
            c.left(dK).cwiseProduct(c.K).cwiseQuotient(Gamma2) -
            c.left(dA).cwiseProduct(c.A).cwiseQuotient(Gamma2) +
            on_last_row(c, Mat<S>(c.gammaC().cwiseInverse().cwiseProduct(state_term)));
        return Sides<S>{dGamma.cwiseProduct(c.Gamma), dlog_Gamma(grad.dg, c)};
      });
    });
  };
  out.push_back(gradient_claim(claim(
      "001.bwd.dlogGamma", backward_src("For dGamma"),
      R"(\delta \log \mathbf{\Gamma}_{[t]} &= \delta \mathbf{\Gamma}_{[t]} \odot \mathbf{\Gamma}_{[t]})",
      "d log Gamma = dGamma . Gamma, dGamma the line above plus [0, ..., d gamma^C] (the "
      "arrowed gradients and dS exact), against the exact gradient of the gates, d log "
      "gamma^r = dg_r - dg_{r+1}",
      dlog_Gamma_line(false))));
  out.push_back(gradient_claim(claim(
      "001.bwd.dlogGamma_products", backward_src("For dGamma"),
      R"(&= \delta \mathbf{Q}_{[t]} \odot \mathbf{Q}_{[t]} + \delta \mathbf{B}_{[t]} \odot \mathbf{B}_{[t]})",
      "d log Gamma = dQ . Q + dB . B - dK . K - dA . A + [0, ..., diag(S^C_[t]^T dS^C_[t])] "
      "(dQ, dB, dK, dA, dS exact), against the exact gradient of the gates",
      dlog_Gamma_line(true))));
  return out;
}

// ---- Discussions ----

std::vector<Claim> kda_claims() {
  std::vector<Claim> out;
  const Check as_kda = check_of([](auto &d) {
    using S = scalar_of<decltype(d)>;
    const KdaCase<S> r = draw_kda(d);
    const NoteRun<S> note = note_recurrence(r.p.x);
    std::vector<Mat<S>> states;
    for (Eigen::Index t = 1; t <= r.kda.q.rows(); ++t)
      states.push_back(kda::recurrent_head(rows_of(r.kda, 0, t, r.kda.h0), S(1)).ht.transpose());
    return flat_sides<S>({stack(note.states), note.o},
                         {stack(states), kda::recurrent_head(r.kda, S(1)).o});
  });
  {
    Claim state = claim(
        "001.kda.recurrence_state", kda_src,
        R"(\mathbf{S}_t &= \mathbf{S}_{t-1} \text{Diag}(\boldsymbol{\alpha}_t) (\mathbf{I} - \boldsymbol{b}_t \boldsymbol{a}_t^\top) + \boldsymbol{v}_t \boldsymbol{k}_t^\top)",
        "S_t = S_{t-1} Diag(alpha_t)(I - b_t a_t^T) + v_t k_t^T with a_t = k_t, b_t = beta_t k_t, "
        "v_t = beta_t v'_t: KDA's states (the reference's kda recurrence, transposed)",
        as_kda);
    state.occurrence = 2; // the first is the forward's recurrence, the third the ungated one's
    out.push_back(state);
  }
  out.push_back(claim(
      "001.kda.recurrence", kda_src,
      R"(\boldsymbol{a}_t &= \boldsymbol{k}_t ,\quad \boldsymbol{b}_t = \beta_t \boldsymbol{k}_t ,\quad \boldsymbol{v}_t = \beta_t \boldsymbol{v'}_t)",
      "with a_t = k_t, b_t = beta_t k_t, v_t = beta_t v'_t the note's S_t = S_{t-1} "
      "Diag(alpha_t)(I - b_t a_t^T) + v_t k_t^T and o_t = S_t q_t are KDA's (the reference's "
      "kda recurrence, transposed)",
      as_kda));
  out.push_back(claim(
      "001.kda.E", kda_src,
      R"(= \left( \mathbf{I} + \text{Diag}(\boldsymbol{\beta}_{[t]}) \left( \overleftarrow{\mathbf{K}_{[t]}} \overrightarrow{\mathbf{K}_{[t]}}^\top \odot \mathbf{M}_{-1} \right) \right)^{-1})",
      "E_[t] = (I + (B<- A->^T . M_-1))^-1 = (I + Diag(beta)(K<- K->^T . M_-1))^-1, both "
      "against kda's A (solve_tril)",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const KdaCase<S> r = draw_kda(d);
        const Truth<S> t(r.p);
        return per_chunk(r.p, t, [&](const Chunk<S> &c) {
          const Mat<S> &A = r.st.A[c.index];
          const Mat<S> KK = scores(c.left(c.K), c.right(c.K), c.M_1);
          return sides_of<S>({inverse(Mat<S>(c.I() + scores(c.left(c.B), c.right(c.A), c.M_1))),
                              inverse(Mat<S>(c.I() + r.beta(c) * KK))},
                             {A, A});
        });
      })));
  out.push_back(claim(
      "001.kda.C", kda_src,
      R"(= - \mathbf{E}_{[t]} \text{Diag}(\boldsymbol{\beta}_{[t]}) \left( \overleftarrow{\mathbf{K}_{[t]}} \overrightarrow{\mathbf{K}_{[t]}}^\top \odot \mathbf{M}_{-1} \right) \mathbf{V}_{[t]})",
      "C_[t] = -E (B<- K->^T . M_-1) V = -E Diag(beta)(K<- K->^T . M_-1) V (E kda's A, V = "
      "Diag(beta) V'), both against the reference's c of the substituted DPLR",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const KdaCase<S> r = draw_kda(d);
        const Truth<S> t(r.p);
        return per_chunk(r.p, t, [&](const Chunk<S> &c) {
          const Mat<S> &E = r.st.A[c.index];
          const Mat<S> KK = scores(c.left(c.K), c.right(c.K), c.M_1);
          return sides_of<S>({Mat<S>(-E * scores(c.left(c.B), c.right(c.K), c.M_1) * c.V),
                              Mat<S>(-E * r.beta(c) * KK * c.V)},
                             {c.C, c.C});
        });
      })));
  // U = V + C, line by line: each form against kda's u (E kda's A, C the reference's).
  const auto u_forms = [](bool second_line) {
    return check_of([second_line](auto &d) {
      using S = scalar_of<decltype(d)>;
      const KdaCase<S> r = draw_kda(d);
      const Truth<S> t(r.p);
      return per_chunk(r.p, t, [&](const Chunk<S> &c) {
        const Mat<S> &E = r.st.A[c.index];
        const Mat<S> N = r.beta(c) * scores(c.left(c.K), c.right(c.K), c.M_1);
        const Mat<S> u = r.st.u.middleRows(c.s, c.n);
        if (second_line)
          return sides_of<S>({Mat<S>(E * (inverse(E) - N) * c.V), Mat<S>(E * c.V)}, {u, u});
        return sides_of<S>({Mat<S>(c.V + c.C), Mat<S>((c.I() - E * N) * c.V)}, {u, u});
      });
    });
  };
  out.push_back(claim("001.kda.U", kda_src,
                      R"(\mathbf{U}_{[t]} &:= \mathbf{V}_{[t]} + \mathbf{C}_{[t]})",
                      "U_[t] := V + C = (I - E Diag(beta)(K<- K->^T . M_-1)) V (E kda's A, C the "
                      "reference's), each form against kda's u",
                      u_forms(false)));
  out.push_back(claim(
      "001.kda.U_EV", kda_src,
      R"(&= \mathbf{E}_{[t]} \left( \mathbf{E}_{[t]}^{-1} - \text{Diag}(\boldsymbol{\beta}_{[t]}))",
      "U_[t] = E (E^-1 - Diag(beta)(K<- K->^T . M_-1)) V = E V (E kda's A), each form against "
      "kda's u",
      u_forms(true)));
  out.push_back(claim(
      "001.kda.V_new", kda_src,
      R"(\mathbf{V}_{[t],new} &:= \mathbf{V}_{[t],1} + \mathbf{V}_{[t],2})",
      "V_new := V_1 + V_2 = V + C - W S^C_[t-1]^T = U - W S^C_[t-1]^T (W, C, V_2 the "
      "reference's DPLR stages, U kda's u), every form against kda's v_new",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const KdaCase<S> r = draw_kda(d);
        const Truth<S> t(r.p);
        return per_chunk(r.p, t, [&](const Chunk<S> &c) {
          const Mat<S> v_new = r.st.v_new.middleRows(c.s, c.n);
          const Mat<S> WS = c.W * c.S0.transpose();
          return sides_of<S>({Mat<S>(c.V + t.st.v2.middleRows(c.s, c.n)), Mat<S>(c.V + c.C - WS),
                              Mat<S>(r.st.u.middleRows(c.s, c.n) - WS)},
                             {v_new, v_new, v_new});
        });
      })));
  return out;
}

std::vector<Claim> no_gate_claims() {
  std::vector<Claim> out;
  out.push_back(
      claim("001.nogate.recurrence", no_gate_src,
            R"(\boldsymbol{b}_t &= \text{Diag}(\boldsymbol{\alpha_t})^{-1} \boldsymbol{d}_t)",
            "with b_t = Diag(alpha_t)^-1 d_t, the gated recurrence S_{t-1} Diag(alpha_t)(I - b_t "
            "a_t^T) + v_t k_t^T is the reference's no_gate recurrence",
            check_of([](auto &d) {
              using S = scalar_of<decltype(d)>;
              const Dplr<S> p = draw_dplr(d); // x.b holds d
              const Truth<S> t(p, Parameterisation::no_gate);
              Head<S> gated = p.x;
              gated.b = p.x.b.cwiseQuotient(exp_of(p.x.g));
              return Sides<S>{stack(note_recurrence(gated).states), stack(t.states)};
            })));
  out.push_back(claim(
      "001.nogate.recurrence_absorbed", no_gate_src,
      R"(= \mathbf{S}_{t-1} (\text{Diag}(\boldsymbol{\alpha}_t) - \boldsymbol{d}_t \boldsymbol{a}_t^\top) + \boldsymbol{v}_t \boldsymbol{k}_t^\top)",
      "S_t = S_{t-1}(Diag(alpha_t) - d_t a_t^T) + v_t k_t^T, against the reference's no_gate "
      "recurrence",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const Dplr<S> p = draw_dplr(d); // x.b holds d
        const Truth<S> t(p, Parameterisation::no_gate);
        std::vector<Mat<S>> absorbed;
        Mat<S> state = p.x.h0.transpose();
        for (Eigen::Index j = 0; j < p.x.q.rows(); ++j) {
          const Mat<S> D_alpha = diag(exp_of(Mat<S>(p.x.g.row(j))));
          state = Mat<S>(state * (D_alpha - p.x.b.row(j).transpose() * p.x.a.row(j)) +
                         p.x.v.row(j).transpose() * p.x.k.row(j));
          absorbed.push_back(state);
        }
        return Sides<S>{stack(absorbed), stack(t.states)};
      })));
  // F and C write D where B<- = B . Gamma, B = Diag(alpha)^-1 D, is needed.
  for (const bool corrected : {false, true}) {
    Claim c = claim(
        corrected ? "001.nogate.F.corrected" : "001.nogate.F", no_gate_src,
        R"(\mathbf{F}_{[t]} &= \mathbf{I} + \left(\mathbf{D}_{[t]} \overrightarrow{\mathbf{A}_{[t]}}^\top \odot \mathbf{M}_{-1} \right))",
        corrected ? "F_[t] = I + (B<- A->^T . M_-1), B<- = (D / alpha) . Gamma (row r: d_r "
                    "gamma^{r-1}), against the reference's F"
                  : "F_[t] = I + (D A->^T . M_-1), against the reference's F",
        check_of([corrected](auto &d) {
          using S = scalar_of<decltype(d)>;
          const Dplr<S> p = draw_dplr(d);
          const Truth<S> t(p, Parameterisation::no_gate);
          return per_chunk(p, t, [&](const Chunk<S> &c) {
            const Mat<S> D = corrected ? c.left(B_of_D(c)) : c.B;
            return Sides<S>{Mat<S>(c.I() + scores(D, c.right(c.A), c.M_1)), c.F};
          });
        }));
    if (corrected)
      c.correction_of = "001.nogate.F";
    out.push_back(c);
  }
  // W = E B<-: the section leaves B<- to be read with B = Diag(alpha)^-1 D, or as D . Gamma.
  {
    Claim c =
        claim("001.nogate.W", no_gate_src,
              R"(\mathbf{W}_{[t]} &= \mathbf{E}_{[t]} \overleftarrow{\mathbf{B}_{[t]}})",
              "W_[t] = E B<- (E the reference's); the section defines arrows for Q and K only");
    c.occurrence = 2; // the first is the key results' W, under the backward
    for (const bool from_b : {true, false})
      c.readings.push_back(
          {from_b ? "B<- = B . Gamma, b_t = Diag(alpha_t)^-1 d_t" : "B<- = D . Gamma",
           from_b ? "W = E ((D / alpha) . Gamma)" : "W = E (D . Gamma)",
           check_of([from_b](auto &d) {
             using S = scalar_of<decltype(d)>;
             const Dplr<S> p = draw_dplr(d);
             const Truth<S> t(p, Parameterisation::no_gate);
             return per_chunk(p, t, [&](const Chunk<S> &c) {
               return Sides<S>{c.E * c.left(from_b ? B_of_D(c) : c.B), c.W};
             });
           })});
    out.push_back(c);
  }
  for (const bool corrected : {false, true}) {
    Claim c = claim(
        corrected ? "001.nogate.C.corrected" : "001.nogate.C", no_gate_src,
        R"(\mathbf{C}_{[t]} = - \mathbf{E}_{[t]} \left( \mathbf{D}_{[t]} \overrightarrow{\mathbf{K}_{[t]}}^\top \odot \mathbf{M}_{-1} \right) \mathbf{V}_{[t]})",
        corrected ? "C_[t] = -E (B<- K->^T . M_-1) V, B<- = (D / alpha) . Gamma (E the "
                    "reference's), against the reference's c"
                  : "C_[t] = -E (D K->^T . M_-1) V (E the reference's), against the reference's c",
        check_of([corrected](auto &d) {
          using S = scalar_of<decltype(d)>;
          const Dplr<S> p = draw_dplr(d);
          const Truth<S> t(p, Parameterisation::no_gate);
          return per_chunk(p, t, [&](const Chunk<S> &c) {
            const Mat<S> D = corrected ? c.left(B_of_D(c)) : c.B;
            return Sides<S>{Mat<S>(-c.E * scores(D, c.right(c.K), c.M_1) * c.V), c.C};
          });
        }));
    if (corrected)
      c.correction_of = "001.nogate.C";
    out.push_back(c);
  }
  return out;
}
} // namespace

std::vector<Claim> seed001::backward_and_discussion_claims() {
  std::vector<Claim> out;
  for (auto part : {key_result_claims, wy_gradient_claims, input_gradient_claims,
                    gate_gradient_claims, kda_claims, no_gate_claims})
    for (Claim &c : part())
      out.push_back(std::move(c));
  return out;
}

} // namespace ruleproof::proofs::notes
