// ruleproof property tests: gated_oja (per-value gate), what is its own: the chunk
// transition against its steps, and the gate at 1 against a direct recurrence and the delta
// rule, as templates over the scalar; gated_oja_tests_<scalar>.cpp states them in one scalar
// each. The properties every rule has (forms agree, varlen, halves, causality, extreme gates,
// gradients) are stated once for every rule, gated_oja included, in properties_<scalar>.cpp
// (checks/properties.hpp). Bounds derived in checks/lowrank_bounds.hpp; replay with
// RC_PARAMS="seed=N" (the seed is logged).
#pragma once

#include "dplr_support.hpp"
#include "reference/kda/kda.hpp"

namespace ruleproof::lowrank_tests {

/// A gated_oja case (values of norm <= 1, beta in (0, 1]), varlen half the time.
inline Case draw(std::size_t max_T, std::size_t max_d) {
  return draw_case(Rule::gated_oja, max_T, max_d, *rc::gen::arbitrary<bool>(), false);
}

/// \brief Seed 000's D^C and H^C: the chunk's transition h' = h D^T + H equals the product of
/// its steps A_t (I - beta_t v_t v_t^T) and the recurrence run from a zero state.
template <Scalar S> void gated_oja_chunk_transition_is_the_product_of_its_steps() {
  log_seed();
  rc::prop("D, H", [] {
    const Case c = draw(10, 4);
    RC_LOG() << describe(c) << "\n";
    const Inputs<S> in = make_inputs<S>(c);
    const Options o = c.options();
    const Magnitudes<S> m = magnitudes(c, in);
    const S scale = scale_of<S>(o, c.K);
    std::string why;
    bool ok = true;
    for (const Sequence &seq : sequences_of(c.B, c.T, o))
      for (std::size_t h = 0; h < c.H; ++h) {
        const Head<S> x = slice_head(in, seq, h, gated_oja::signature);
        const gated_oja::ChunkStages<S> st = gated_oja::chunk_forward_head(x, scale, c.C).stages;
        const auto chunks = shared::chunks_of(x.q.rows(), c.C);
        for (std::size_t i = 0; i < chunks.size(); ++i) {
          using std::exp;
          Mat<S> Dt = Mat<S>::Identity(c.V, c.V), H = Mat<S>::Zero(c.K, c.V);
          Mat<S> D_mag = Dt, H_mag = H;
          for (Eigen::Index t = chunks[i].begin; t < chunks[i].begin + chunks[i].size; ++t) {
            Mat<S> step = -x.beta(t) * x.v.row(t).transpose() * x.v.row(t);
            step.diagonal().array() += S(1);
            for (Eigen::Index j = 0; j < static_cast<Eigen::Index>(c.V); ++j)
              step.row(j) *= S(exp(x.g(t, j))); // A_t (I - beta v v^T)
            const Mat<S> kv = x.beta(t) * x.k.row(t).transpose() * x.v.row(t);
            Dt = Dt * step;
            H = H * step + kv;
            D_mag = D_mag * step.cwiseAbs();
            H_mag = H_mag * step.cwiseAbs() + kv.cwiseAbs();
          }
          // the chunk form's own majorant: Diag(gamma) + |V_end|^T |W|, |U|^T |V_end|
          const auto [s0, len] = chunks[i];
          const Mat<S> gc = st.g_cum.middleRows(s0, len);
          const Mat<S> v_end =
              x.v.middleRows(s0, len).cwiseProduct(shared::decay_to_end(gc)).cwiseAbs();
          const Mat<S> D_wy = Mat<S>(shared::decay_last(gc).asDiagonal()) +
                              v_end.transpose() * st.w.middleRows(s0, len).cwiseAbs();
          const Mat<S> H_wy = st.u.middleRows(s0, len).cwiseAbs().transpose() * v_end;
          using std::max;
          ok &= agree("D", tensor_of(st.D[i]), tensor_of(Mat<S>(Dt.transpose())),
                      bound_of(m.n, m.kappa, max(max_abs(D_mag), max_abs(D_wy)), 2), why);
          ok &= agree("H", tensor_of(st.H[i]), tensor_of(H),
                      bound_of(m.n, m.kappa, max(max_abs(H_mag), max_abs(H_wy)), 2), why);
        }
      }
    RC_LOG() << why;
    RC_ASSERT(ok);
  });
}

/// \brief With its gate at 1 (g = 0) the rule is S_t = S_{t-1} (I - beta_t v_t v_t^T) +
/// beta_t k_t v_t^T: checked against that recurrence written with matrices, and its final
/// state against the delta rule with keys and values exchanged (S_t^T = (I - beta v v^T)
/// S_{t-1}^T + beta v k^T).
template <Scalar S> void gated_oja_with_gate_one_is_the_oja_rule() {
  log_seed();
  rc::prop("g = 0", [] {
    const Case c = draw(10, 4);
    RC_LOG() << describe(c) << "\n";
    Inputs<S> in = make_inputs<S>(c);
    in.g = Tensor<S>(in.g.shape()); // g = 0
    const Options o = c.options();
    const Magnitudes<S> m = magnitudes(c, in);
    const S scale = scale_of<S>(o, c.K);
    Output<S> direct{Tensor<S>(in.v.shape()), Tensor<S>({c.sequences(), c.H, c.K, c.V})};
    for (const Sequence &seq : sequences_of(c.B, c.T, o))
      for (std::size_t h = 0; h < c.H; ++h) {
        const Head<S> x = slice_head(in, seq, h, gated_oja::signature);
        Mat<S> state = x.h0;
        for (Eigen::Index t = 0; t < x.q.rows(); ++t) {
          const Mat<S> vv = x.v.row(t).transpose() * x.v.row(t);
          state = state * (Mat<S>(Mat<S>::Identity(c.V, c.V)) - x.beta(t) * vv) +
                  x.beta(t) * x.k.row(t).transpose() * x.v.row(t);
          const Mat<S> o_t = (scale * x.q.row(t)) * state;
          for (std::size_t j = 0; j < c.V; ++j)
            direct.o(seq.batch, seq.begin + t, h, j) = o_t(0, j);
        }
        for (std::size_t i = 0; i < c.K; ++i)
          for (std::size_t j = 0; j < c.V; ++j)
            direct.final_state(seq.index, h, i, j) = state(i, j);
      }
    std::string why;
    bool ok = outputs_agree("recurrent", gated_oja::recurrent(in, o), direct, m, why);
    ok &= outputs_agree("chunk", gated_oja::chunk(in, o), direct, m, why);
    // the delta rule on (q: any K'=V, k = v, v = k, beta), state transposed
    Inputs<S> delta;
    delta.q = in.v;
    delta.k = in.v;
    delta.v = in.k;
    delta.beta = in.beta;
    if (!in.h0.empty()) {
      delta.h0 = Tensor<S>({c.sequences(), c.H, c.V, c.K});
      for (std::size_t n = 0; n < c.sequences(); ++n)
        for (std::size_t h = 0; h < c.H; ++h)
          for (std::size_t i = 0; i < c.K; ++i)
            for (std::size_t j = 0; j < c.V; ++j)
              delta.h0(n, h, j, i) = in.h0(n, h, i, j);
    }
    const Output<S> d = kda::family::recurrent(delta, o, GateKind::none, kda::Variant{});
    Tensor<S> dt(direct.final_state.shape());
    for (std::size_t n = 0; n < c.sequences(); ++n)
      for (std::size_t h = 0; h < c.H; ++h)
        for (std::size_t i = 0; i < c.K; ++i)
          for (std::size_t j = 0; j < c.V; ++j)
            dt(n, h, i, j) = d.final_state(n, h, j, i);
    ok &= agree("delta rule final state", dt, direct.final_state,
                bound_of(m.n, m.kappa, m.state, 2), why);
    RC_LOG() << why;
    RC_ASSERT(ok);
  });
}

} // namespace ruleproof::lowrank_tests
