// Properties of the delta-rule family's chunkwise analytic backward (seed 003 backward steps
// 1-7) in double: every gradient (dq, dk, dv, dg, dbeta, dh0) equals the exact derivative of
// the recurrent form (dual numbers) and central finite differences of it (with their
// Richardson error estimate), for every rule, variant, chunk size and grouped value heads.
// Replay a failure with RC_PARAMS="seed=N" (the seed is printed at the start of the test).
#include <algorithm>

#include <catch2/catch.hpp>

#include "delta_support.hpp"
#include "reference/core/gradients.hpp"

using namespace ruleproof;
using namespace ruleproof::delta_tests;

TEST_CASE("delta_chunk_backward_equals_dual_numbers_equals_finite_differences") {
  log_seed();
  rc::prop("every gradient of <dO, O> + <dS_T, S_T>", [] {
    Case c = draw_case(7, *rc::gen::arbitrary<bool>());
    c.K = std::min<std::size_t>(c.K, 4);
    RC_LOG() << describe(c) << "\n";
    Inputs<double> in = make_inputs(c);
    for (std::size_t i = 0; i < in.g.size(); ++i)     // central differences step g by up to
      in.g[i] = std::min(in.g[i], -1e-3);             // 2 eps^(1/3) max(1, |g|): keep g + 2h <= 0
    const double beta_top = c.neg_eigval ? 2.0 : 1.0; // and beta -+ 2h inside (0, beta_top]
    for (std::size_t i = 0; i < in.beta.size(); ++i)
      in.beta[i] = std::clamp(in.beta[i], 1e-3, beta_top - 1e-3);
    if (c.l2norm) // x / sqrt(||x||^2 + eps) bends on the scale ||x||: keep it >= 1/4 so that
      for (Tensor<double> *x : {&in.q, &in.k})              // the step eps^(1/3) resolves it and
        for (std::size_t r = 0; r < x->size() / c.K; ++r) { // Richardson's estimate holds
          double n2 = 0;
          for (std::size_t i = 0; i < c.K; ++i)
            n2 += (*x)[r * c.K + i] * (*x)[r * c.K + i];
          for (std::size_t i = 0; i < c.K && n2 < 1.0 / 16; ++i)
            (*x)[r * c.K + i] = n2 > 0 ? (*x)[r * c.K + i] / (4 * std::sqrt(n2)) : 0.25;
        }
    const Options opts = c.options();
    const auto forward = [&](const auto &x) { return run(Form::recurrent, c, x, opts); };
    const Cotangents<double> ct = make_cotangents(c, forward(in));
    const Grads<double> analytic = run_backward(c, in, ct, opts);
    const Grads<double> exact = dual_grads(in, ct, forward);
    const FiniteDifference<double> fd = finite_difference_grads(in, ct, forward);

    // The bounds of checks/delta_bounds.hpp: gamma_{2n} kappa^2 times the magnitude of the
    // gradient's terms (analytic vs exact); the loss's rounding over the step for finite
    // differences.
    const Magnitudes m = magnitudes(c, in);
    const checks::delta::GradientBound<double> gb =
        checks::delta::gradient_bound<double>(forward_ops(c), m, ct);
    const double bound = gb.grads;
    const double eps = scalar_traits<double>::epsilon();
    RC_LOG() << "M " << m.state << ", cond(I + A0) " << m.kappa << ", bound " << bound << "\n";
    for (const auto &f : grad_fields<double>()) {
      const Tensor<double> &a = analytic.*f.grad, &e = exact.*f.grad, &d = fd.grads.*f.grad;
      const Tensor<double> &fd_err = fd.error.*f.grad, &x = in.*f.input;
      RC_ASSERT(a.shape() == e.shape());
      const Discrepancy ae = compare(a, e, [&](std::size_t) { return bound; });
      // Finite differences: the Richardson estimate, plus the forward's rounding over the
      // step h = eps^(1/3) max(1, |x|), plus the exact gradient's own rounding.
      const auto fd_bound = [&](std::size_t i) {
        const double h = std::cbrt(eps) * std::max(1.0, std::abs(x[i]));
        return fd_err[i] + gb.rounding / h + bound;
      };
      const Discrepancy de = compare(d, e, fd_bound);
      const Discrepancy da = compare(d, a, fd_bound);
      RC_LOG() << "d" << f.name << ": analytic vs dual error/bound " << ae.worst_over_bound
               << " (abs " << ae.max_abs_error << ", at " << ae.worst_index << ": " << ae.value_a
               << " vs " << ae.value_b << "); finite differences vs dual " << de.worst_over_bound
               << ", vs analytic " << da.worst_over_bound << "\n";
      RC_ASSERT(ae.holds());
      RC_ASSERT(de.holds());
      RC_ASSERT(da.holds());
    }
  });
}
