// Properties of the delta-rule family's forward forms in double that are its own: the
// invariants of every chunkwise stage (seed 003 forward steps 1-5), grouped value heads reading
// query/key head i / G, and the refusal of inputs outside the domain. The properties every rule
// has (forms agree for every chunk size, varlen, carried state, causality, extreme gates,
// gradients) are stated once for every rule in properties_<scalar>.cpp (checks/properties.hpp),
// the delta rules' with their variants drawn per case (q, k normalised inside the op, beta up
// to 2, grouped value heads). Replay a failure with RC_PARAMS="seed=N" (the seed is printed at
// the start of each test).
#include <catch2/catch.hpp>

#include "delta_support.hpp"

using namespace ruleproof;
using namespace ruleproof::delta_tests;

namespace {

/// Index h along `axis` of x, that axis becoming 1 ([B, T, H, ...]: axis 2; states: 1).
Tensor<double> head_of(const Tensor<double> &x, std::size_t axis, std::size_t h) {
  if (x.empty())
    return x;
  Shape s = x.shape();
  s[axis] = 1;
  Tensor<double> y(s);
  if (x.size() == 0)
    return y;
  std::size_t outer = 1;
  for (std::size_t a = 0; a < axis; ++a)
    outer *= x.dim(a);
  const std::size_t inner = x.size() / (outer * x.dim(axis));
  for (std::size_t o = 0; o < outer; ++o)
    for (std::size_t e = 0; e < inner; ++e)
      y[o * inner + e] = x[(o * x.dim(axis) + h) * inner + e];
  return y;
}

} // namespace

TEST_CASE("delta_chunk_stages_hold_their_invariants") {
  log_seed();
  rc::prop("A, w, u, h, v_new and the final state against the recurrence", [] {
    const Case c = draw_case(12, false);
    RC_LOG() << describe(c) << "\n";
    const Inputs<double> in = make_inputs(c);
    const Magnitudes m = magnitudes(c, in);
    const ForwardBound<double> bound = forward_bound<double>(c, m);
    const double scale = 1 / std::sqrt(static_cast<double>(c.K));
    for (const Head<double> &x : kda_heads(c, in)) {
      const kda::ChunkForward<double> f = kda::chunk_forward_head(x, scale, c.C);
      const kda::ChunkStages<double> &st = f.stages;
      const auto chunks = shared::chunks_of(x.q.rows(), c.C);
      RC_ASSERT(st.A.size() == chunks.size());
      RC_ASSERT(st.h.size() == chunks.size());
      for (std::size_t i = 0; i < chunks.size(); ++i) {
        const auto [s, n] = chunks[i];
        const Mat<double> &A = st.A[i], &A0 = st.A0[i];
        // A unit lower triangular, exactly.
        for (Eigen::Index r = 0; r < n; ++r)
          for (Eigen::Index j = r; j < n; ++j)
            RC_ASSERT(A(r, j) == (r == j ? 1.0 : 0.0));
        // ||(I + A0) A - I|| within Higham's forward-substitution residual, elementwise
        // gamma_n |I + A0| |A|, and as much again for forming the product.
        const Mat<double> T = Mat<double>::Identity(n, n) + A0;
        const Mat<double> residual = T * A - Mat<double>::Identity(n, n);
        const Mat<double> allowed =
            gamma_n<double>(2.0 * static_cast<double>(n)) * (T.cwiseAbs() * A.cwiseAbs());
        for (Eigen::Index r = 0; r < n; ++r)
          for (Eigen::Index j = 0; j < n; ++j) {
            if (std::abs(residual(r, j)) > allowed(r, j))
              RC_LOG() << "chunk " << i << " residual (" << r << "," << j << ") " << residual(r, j)
                       << " > " << allowed(r, j) << ", cond(I + A0) = " << condition_inf(A0, A)
                       << "\n";
            RC_ASSERT(std::abs(residual(r, j)) <= allowed(r, j));
          }
        // u and w solve (I + A0) u = Diag(beta) V, (I + A0) w = Diag(beta) (K . e^g_cum).
        const Mat<double> bv = x.beta.segment(s, n).asDiagonal() * x.v.middleRows(s, n);
        const Mat<double> bk = x.beta.segment(s, n).asDiagonal() *
                               x.k.middleRows(s, n).cwiseProduct(
                                   shared::exp_of(Mat<double>(st.g_cum.middleRows(s, n))));
        const Mat<double> u = st.u.middleRows(s, n), w = st.w.middleRows(s, n);
        const double cond = condition_inf(A0, A);
        const double tol_u = gamma_n<double>(4.0 * static_cast<double>(n) + 2) * cond *
                             (bv.cwiseAbs().maxCoeff() + 1e-300);
        const double tol_w = gamma_n<double>(4.0 * static_cast<double>(n) + 2) * cond *
                             (bk.cwiseAbs().maxCoeff() + 1e-300);
        RC_ASSERT((T * u - bv).cwiseAbs().maxCoeff() <= tol_u);
        RC_ASSERT((T * w - bk).cwiseAbs().maxCoeff() <= tol_w);
        // v_new recomputes from u, w and h (elementwise gamma_{K+1}(|u| + |w||h|)).
        const Mat<double> v_new = st.v_new.middleRows(s, n);
        const Mat<double> again = u - w * st.h[i];
        const Mat<double> v_allowed = gamma_n<double>(static_cast<double>(c.K) + 1) *
                                      (u.cwiseAbs() + w.cwiseAbs() * st.h[i].cwiseAbs());
        for (Eigen::Index r = 0; r < n; ++r)
          for (Eigen::Index j = 0; j < v_new.cols(); ++j)
            RC_ASSERT(std::abs(v_new(r, j) - again(r, j)) <= v_allowed(r, j));
        // The stored h chain is the recurrence at chunk starts.
        Head<double> prefix = x;
        prefix.q = x.q.topRows(s);
        prefix.k = x.k.topRows(s);
        prefix.v = x.v.topRows(s);
        prefix.g = x.g.topRows(s);
        prefix.beta = x.beta.head(s);
        const Mat<double> truth_h = kda::recurrent_head(prefix, scale).ht;
        const double h_err = (st.h[i] - truth_h).cwiseAbs().maxCoeff();
        RC_LOG() << "chunk " << i << ": h error/bound " << h_err / bound.state << "\n";
        RC_ASSERT(h_err <= bound.state);
        // v_new is the recurrence's pseudo-value beta_t (v_t - S_{t-1}^T Diag(e^{g_t}) k_t).
        for (Eigen::Index r = 0; r < n; ++r) {
          Head<double> upto = x;
          const Eigen::Index t = s + r;
          upto.q = x.q.topRows(t);
          upto.k = x.k.topRows(t);
          upto.v = x.v.topRows(t);
          upto.g = x.g.topRows(t);
          upto.beta = x.beta.head(t);
          const Mat<double> S_prev = kda::recurrent_head(upto, scale).ht;
          const Vec<double> decayed_k = x.k.row(t).transpose().cwiseProduct(
              shared::exp_of(Mat<double>(x.g.row(t).transpose())));
          const Vec<double> delta =
              x.beta(t) * (x.v.row(t).transpose() - S_prev.transpose() * decayed_k);
          const double allowed_delta =
              x.beta(t) * (bound.state + gamma_n<double>(forward_ops(c)) * x.v.row(t).norm());
          RC_ASSERT((v_new.row(r).transpose() - delta).cwiseAbs().maxCoeff() <= allowed_delta);
        }
      }
      // The final state is one more chunk of the recurrence from the last stored h.
      if (!chunks.empty()) {
        const auto [s, n] = chunks.back();
        Head<double> last = x;
        last.q = x.q.middleRows(s, n);
        last.k = x.k.middleRows(s, n);
        last.v = x.v.middleRows(s, n);
        last.g = x.g.middleRows(s, n);
        last.beta = x.beta.segment(s, n);
        last.h0 = st.h.back();
        const double err = (kda::recurrent_head(last, scale).ht - f.out.ht).cwiseAbs().maxCoeff();
        RC_LOG() << "final state error/bound " << err / bound.state << "\n";
        RC_ASSERT(err <= bound.state);
      }
    }
  });
}

TEST_CASE("delta_grouped_value_heads_read_query_key_head_i_over_G") {
  log_seed();
  rc::prop("value head i of a grouped call equals a call on q, k head i / G alone", [] {
    Case c = draw_case(8, false);
    c.groups = *size_in(2, 3);
    RC_LOG() << describe(c) << "\n";
    const Inputs<double> in = make_inputs(c);
    const Output<double> all = run(Form::chunk, c, in, c.options());
    for (std::size_t i = 0; i < c.HV(); ++i) {
      const std::size_t qk = i / c.groups;
      const Inputs<double> one{head_of(in.q, 2, qk), head_of(in.k, 2, qk),   head_of(in.v, 2, i),
                               head_of(in.g, 2, i),  head_of(in.beta, 2, i), head_of(in.h0, 1, i)};
      Case single = c;
      single.H = 1;
      single.groups = 1;
      const Output<double> alone = run(Form::chunk, single, one, single.options());
      RC_ASSERT(identical(head_of(all.o, 2, i), alone.o));
    }
  });
}

TEST_CASE("delta_inputs_outside_the_domain_are_refused") {
  Case c;
  c.rule = Rule::gated_delta_rule;
  c.T = 3;
  c.K = 2;
  c.V = 2;
  c.C = 2;
  Inputs<double> in = make_inputs(c);
  in.beta[1] = 1.5;
  CHECK_THROWS_AS(run(Form::chunk, c, in, c.options()), InputError);
  c.neg_eigval = true;
  CHECK_NOTHROW(run(Form::chunk, c, in, c.options()));
  in.beta[1] = 2.0; // (0, 2) is open at 2: I - 2 k k^T is a reflection
  CHECK_THROWS_AS(run(Form::chunk, c, in, c.options()), InputError);
  in.beta[1] = 0.0;
  CHECK_THROWS_AS(run(Form::chunk, c, in, c.options()), InputError);
  Case grouped = c;
  grouped.H = 2;
  grouped.groups = 1;
  Inputs<double> bad = make_inputs(grouped);
  bad.v = Tensor<double>({1, 3, 3, 2}); // 3 value heads, 2 query/key heads
  CHECK_THROWS_AS(run(Form::recurrent, grouped, bad, grouped.options()), InputError);
}
