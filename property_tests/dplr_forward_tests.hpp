// ruleproof property tests: dplr (three parameterisations) and iplr, what is theirs alone: the
// reduction to kda, the mapping between the parameterisations, iplr as dplr without decay, the
// chunk transition against its steps and the refusal of a bad a, b; as templates over the
// scalar, dplr_forward_tests_<scalar>.cpp states them in one scalar each. The properties every
// rule has (forms agree, varlen, halves, causality, extreme gates, gradients) are stated once
// for every rule, these four included, in properties_<scalar>.cpp (checks/properties.hpp).
// Bounds derived in checks/lowrank_bounds.hpp. Replay a failure with RC_PARAMS="seed=N" (the
// seed is logged); sweep wider with RC_PARAMS="max_success=1000".
#pragma once

#include "dplr_support.hpp"
#include "reference/kda/kda.hpp"

namespace ruleproof::lowrank_tests {

/// |A| |B|: the majorant of a product.
template <class X, class Y>
Mat<typename X::Scalar> abs_product(const Eigen::MatrixBase<X> &A, const Eigen::MatrixBase<Y> &B) {
  return A.cwiseAbs() * B.cwiseAbs();
}

/// \brief Seed 001, "Reducing to KDA": a = k, b = beta k and values beta v make dplr (seed
/// parameterisation, (I - a b^T) A) KDA's (I - beta k k^T) A; the chunk stages correspond:
/// E = KDA's A, W = KDA's w, V + C = KDA's u, V + V2 = KDA's v_new, the states alike.
template <Scalar S> void dplr_reduces_to_kda() {
  log_seed();
  prop_cases("kda", 60, [] {
    const Case c = draw_case(Rule::dplr, 10, 4, *rc::gen::arbitrary<bool>(), *size_in(0, 3) == 0);
    RC_LOG() << describe(c) << "\n";
    const Inputs<S> in = make_inputs<S>(c);
    Inputs<S> kin; // KDA's inputs: q, k, v, g from the case, beta in (0, 1]
    kin.q = in.q;
    kin.k = in.a; // rows of norm <= 1
    kin.v = in.v;
    kin.g = in.g;
    kin.h0 = in.h0;
    kin.beta = Tensor<S>({c.B, c.T, c.H});
    for (std::size_t i = 0; i < kin.beta.size(); ++i) {
      using std::abs;
      kin.beta[i] = S(1) - abs(in.b[i * c.K]) / S(2); // (0, 1]
    }
    Inputs<S> din = in; // a = k, b = beta k, v = beta v
    din.k = kin.k;
    for (std::size_t b = 0; b < c.B; ++b)
      for (std::size_t t = 0; t < c.T; ++t)
        for (std::size_t h = 0; h < c.H; ++h) {
          const S beta = kin.beta(b, t, h);
          for (std::size_t i = 0; i < c.K; ++i) {
            din.a(b, t, h, i) = kin.k(b, t, h, i);
            din.b(b, t, h, i) = beta * kin.k(b, t, h, i);
          }
          for (std::size_t j = 0; j < c.V; ++j)
            din.v(b, t, h, j) = beta * kin.v(b, t, h, j);
        }
    const Options o = c.options();
    const Magnitudes<S> m = magnitudes(c, din);
    std::string why;
    bool ok = outputs_agree("recurrent", dplr::recurrent(din, o), kda::recurrent(kin, o), m, why);
    ok &= outputs_agree("chunk", dplr::chunk(din, o), kda::chunk(kin, o), m, why);
    const S scale = scale_of<S>(o, c.K);
    for (const Sequence &seq : sequences_of(c.B, c.T, o))
      for (std::size_t h = 0; h < c.H; ++h) {
        const dplr::ChunkStages<S> d =
            dplr::chunk_forward_head(dplr::as_core(slice_head(din, seq, h, dplr::signature),
                                                   dplr::Parameterisation::seed),
                                     scale, c.C)
                .stages;
        const kda::ChunkStages<S> k =
            kda::chunk_forward_head(slice_head(kin, seq, h, kda::signature), scale, c.C).stages;
        const double n = m.n, kappa = m.kappa;
        for (std::size_t i = 0; i < d.E.size(); ++i)
          ok &= agree("E vs A", tensor_of(d.E[i]), tensor_of(k.A[i]),
                      bound_of(n, kappa, max_abs(d.E[i]), 2), why);
        for (std::size_t i = 0; i < d.h.size(); ++i)
          ok &= agree("h", tensor_of(d.h[i]), tensor_of(k.h[i]), bound_of(n, m.kappa, m.state, 2),
                      why);
        // W = E B<-: error of E (kappa gamma |E|) times |B<-|, plus the product's own.
        const Mat<S> vd = slice_head(din, seq, h, dplr::signature).v;
        Mat<S> w_mag = Mat<S>::Zero(d.w.rows(), d.w.cols());
        Mat<S> u_mag = vd.cwiseAbs(), vn_mag = vd.cwiseAbs();
        const auto chunks = shared::chunks_of(d.w.rows(), c.C);
        for (std::size_t i = 0; i < chunks.size(); ++i) {
          const auto [s, len] = chunks[i];
          w_mag.middleRows(s, len) = abs_product(d.E[i], d.intra.b_left.middleRows(s, len));
          u_mag.middleRows(s, len) +=
              abs_product(d.E[i], abs_product(d.intra.A_bk[i], vd.middleRows(s, len)));
          vn_mag.middleRows(s, len) =
              u_mag.middleRows(s, len) + abs_product(w_mag.middleRows(s, len), d.h[i]);
        }
        ok &=
            agree("w", tensor_of(d.w), tensor_of(k.w), bound_of(n, kappa, max_abs(w_mag), 2), why);
        ok &= agree("V + C vs u", tensor_of(Mat<S>(vd + d.c)), tensor_of(k.u),
                    bound_of(n, kappa, max_abs(u_mag), 2), why);
        ok &= agree("V + V2 vs v_new", tensor_of(Mat<S>(vd + d.v2)), tensor_of(k.v_new),
                    bound_of(n, kappa, max_abs(vn_mag), 2), why);
      }
    RC_LOG() << why;
    RC_ASSERT(ok);
  });
}

/// \brief The two parameterisations of DESIGN.md's table are one family (recurrent.hpp):
/// seed (a, b) = fla (a_fla = -exp(g) . b, b_fla = a) = no_gate (a, exp(g) . b) (seed
/// 001, "DPLR without explicit gating").
template <Scalar S> void dplr_parameterisations_agree_under_the_mapping() {
  log_seed();
  rc::prop("seed = fla = no_gate", [] {
    const Case c = draw_case(Rule::dplr, 10, 4, *rc::gen::arbitrary<bool>(), *size_in(0, 3) == 0);
    RC_LOG() << describe(c) << "\n";
    const Inputs<S> in = make_inputs<S>(c);
    Inputs<S> fla = in, no_gate = in;
    for (std::size_t i = 0; i < in.a.size(); ++i) {
      using std::exp;
      const S eb = exp(in.g[i]) * in.b[i];
      fla.a[i] = -eb;
      fla.b[i] = in.a[i];
      no_gate.b[i] = eb;
    }
    const Options o = c.options();
    const dplr::Variant seed_v{dplr::Parameterisation::seed}, fla_v{dplr::Parameterisation::fla},
        ng_v{dplr::Parameterisation::no_gate};
    const Magnitudes<S> m = magnitudes(c, in);
    std::string why;
    const Output<S> s = dplr::recurrent(in, o, seed_v);
    bool ok = outputs_agree("fla recurrent", dplr::recurrent(fla, o, fla_v), s, m, why);
    ok &= outputs_agree("no_gate recurrent", dplr::recurrent(no_gate, o, ng_v), s, m, why);
    ok &=
        outputs_agree("fla chunk", dplr::chunk(fla, o, fla_v), dplr::chunk(in, o, seed_v), m, why);
    RC_LOG() << why;
    RC_ASSERT(ok);
  });
}

template <Scalar S> void iplr_is_dplr_fla_without_decay() {
  log_seed();
  rc::prop("iplr", [] {
    const Case c = draw_case(Rule::iplr, 10, 4, *rc::gen::arbitrary<bool>(), false);
    RC_LOG() << describe(c) << "\n";
    const Inputs<S> in = make_inputs<S>(c);
    Inputs<S> d = in;
    d.g = Tensor<S>({c.B, c.T, c.H, c.K}); // g = 0: A_t = I
    const Options o = c.options();
    const dplr::Variant fla{dplr::Parameterisation::fla};
    const Magnitudes<S> m = magnitudes(c, in);
    std::string why;
    bool ok =
        outputs_agree("recurrent", iplr::recurrent(in, o), dplr::recurrent(d, o, fla), m, why);
    ok &= outputs_agree("chunk", iplr::chunk(in, o), dplr::chunk(d, o, fla), m, why);
    RC_LOG() << why;
    RC_ASSERT(ok);
  });
}

/// \brief Seed 001's P^C_[t] and H^C_[t]: the chunk's transition h' = P h + H equals the
/// product of its steps (A_t - a_t d_t^T) and the recurrence run from a zero state.
template <Scalar S> void dplr_chunk_transition_is_the_product_of_its_steps() {
  log_seed();
  for (Rule r : dplr_rules)
    rc::prop(std::string(name_of(r)), [r] {
      const Case c = draw_case(r, 10, 4, false, false);
      RC_LOG() << describe(c) << "\n";
      const Inputs<S> in = make_inputs<S>(c);
      const Options o = c.options();
      const Magnitudes<S> m = magnitudes(c, in);
      const Signature sig = r == Rule::iplr ? iplr::signature : dplr::signature;
      const S scale = scale_of<S>(o, c.K);
      std::string why;
      bool ok = true;
      for (const Sequence &seq : sequences_of(c.B, c.T, o))
        for (std::size_t h = 0; h < c.H; ++h) {
          const Head<S> x = r == Rule::iplr
                                ? iplr::as_core(slice_head(in, seq, h, sig))
                                : dplr::as_core(slice_head(in, seq, h, sig), param_of(r));
          const dplr::ChunkStages<S> st = dplr::chunk_forward_head(x, scale, c.C).stages;
          const auto chunks = shared::chunks_of(x.q.rows(), c.C);
          for (std::size_t i = 0; i < chunks.size(); ++i) {
            using std::exp;
            Mat<S> P = Mat<S>::Identity(c.K, c.K), H = Mat<S>::Zero(c.K, c.V);
            Mat<S> P_mag = P, H_mag = H;
            for (Eigen::Index t = chunks[i].begin; t < chunks[i].begin + chunks[i].size; ++t) {
              Mat<S> step = -x.a.row(t).transpose() * x.b.row(t);
              for (Eigen::Index j = 0; j < static_cast<Eigen::Index>(c.K); ++j)
                step(j, j) += x.g.cols() ? S(exp(x.g(t, j))) : S(1);
              const Mat<S> kv = x.k.row(t).transpose() * x.v.row(t);
              P = step * P;
              H = step * H + kv;
              P_mag = step.cwiseAbs() * P_mag;
              H_mag = step.cwiseAbs() * H_mag + kv.cwiseAbs();
            }
            // the chunk form's own majorant: Diag(gamma) + |A_end|^T |W|, |K_end|^T |V| +
            // |A_end|^T |C| (A_end = A . e^(Gamma_last - Gamma))
            const auto [s0, len] = chunks[i];
            const Mat<S> gc = st.g_cum.middleRows(s0, len);
            const Mat<S> to_end = shared::decay_to_end(gc);
            const Mat<S> a_end = x.a.middleRows(s0, len).cwiseProduct(to_end).cwiseAbs();
            const Mat<S> k_end = x.k.middleRows(s0, len).cwiseProduct(to_end).cwiseAbs();
            const Mat<S> P_wy = Mat<S>(shared::decay_last(gc).asDiagonal()) +
                                a_end.transpose() * st.w.middleRows(s0, len).cwiseAbs();
            const Mat<S> H_wy = k_end.transpose() * x.v.middleRows(s0, len).cwiseAbs() +
                                a_end.transpose() * st.c.middleRows(s0, len).cwiseAbs();
            using std::max;
            ok &= agree("P", tensor_of(st.P[i]), tensor_of(P),
                        bound_of(m.n, m.kappa, max(max_abs(P_mag), max_abs(P_wy)), 2), why);
            ok &= agree("H", tensor_of(st.H[i]), tensor_of(H),
                        bound_of(m.n, m.kappa, max(max_abs(H_mag), max_abs(H_wy)), 2), why);
          }
        }
      RC_LOG() << why;
      RC_ASSERT(ok);
    });
}

template <Scalar S> void dplr_rejects_bad_a_b() {
  Case c;
  c.T = 3;
  c.K = 2;
  c.V = 2;
  Inputs<S> in = make_inputs<S>(c);
  const Options o = c.options();
  Inputs<S> bad = in;
  bad.a = Tensor<S>({1, 3, 1, 3});
  CHECK_THROWS_WITH(dplr::chunk(bad, o), Catch::Contains("a: shape"));
  bad = in;
  bad.b = Tensor<S>();
  CHECK_THROWS_WITH(dplr::recurrent(bad, o), Catch::Contains("b: shape"));
  bad = in;
  bad.b[0] = std::numeric_limits<S>::quiet_NaN();
  CHECK_THROWS_WITH(dplr::recurrent(bad, o), Catch::Contains("b: element 0 is not finite"));
  Inputs<S> no_ab = in;
  no_ab.beta = Tensor<S>({1, 3, 1}, S(0.5));
  CHECK_THROWS_WITH(gated_oja::recurrent(no_ab, o), Catch::Contains("a: this rule takes no a"));
}

} // namespace ruleproof::lowrank_tests
