// ruleproof property tests of the low-rank rules: the chunkwise analytic backward against
// the gradient truth, two ways (exact dual numbers and finite differences with Richardson's
// error estimate, both over the recurrent form), as templates over the scalar. Bounds:
// checks/lowrank_bounds.hpp.
#pragma once

#include "dplr_support.hpp"

namespace ruleproof::lowrank_tests {

/// \brief Checks every gradient of case c in S: analytic == dual == finite differences.
/// Appends one line per gradient to `why`.
template <Scalar S> bool gradients_agree(const Case &c, std::string &why) {
  using D = Dual<S>;
  using std::cbrt;
  const Inputs<S> in = make_inputs<S>(c, true);
  const Options o = c.options();
  const Rule r = c.rule;
  const auto forward = [&](const Inputs<S> &x) { return run(r, Form::recurrent, x, o); };
  const auto forward_d = [&](const Inputs<D> &x) { return run(r, Form::recurrent, x, o); };
  const Output<S> out = forward(in);
  const Cotangents<S> ct = make_cotangents(c, out);
  const Grads<S> analytic = run_backward(r, in, ct, o);
  const Grads<S> dual = dual_grads(in, ct, forward_d);
  const FiniteDifference<S> fd = finite_difference_grads(in, ct, forward);
  const checks::GradientBound<S> bound =
      checks::lowrank::gradient_bound(r, in, ct, o, magnitudes(c, in));

  const S step0 = cbrt(scalar_traits<S>::epsilon());
  bool ok = true;
  for (const auto &f : grad_fields<S>()) {
    const Tensor<S> &x = in.*f.input;
    if (x.empty())
      continue;
    const std::string what = std::string("d") + f.name;
    // analytic against dual: the analytic form's bound plus the dual's.
    const Tensor<S> &analytic_bound = bound.analytic.*f.grad, &dual_bound = bound.dual.*f.grad;
    const S uniform = analytic_bound.size() ? analytic_bound[0] : S(0); // the same everywhere
    ok &= agree(what + " analytic vs dual", analytic.*f.grad, dual.*f.grad, uniform, why);
    // finite differences against dual: Richardson + rounding / h + the dual's bound.
    const Tensor<S> &fdg = fd.grads.*f.grad, &err = fd.error.*f.grad;
    const Discrepancy d = compare(fdg, dual.*f.grad, [&](std::size_t i) {
      using std::abs;
      const S h = step0 * (abs(x[i]) > S(1) ? abs(x[i]) : S(1));
      return S(err[i] + bound.rounding / h + dual_bound[i]);
    });
    std::ostringstream os;
    os << what << " fd vs dual: error/bound " << d.worst_over_bound << " (max abs "
       << d.max_abs_error << ")\n";
    why += os.str();
    ok &= d.holds();
  }
  return ok;
}

/// \brief Rule r's gradients on `moderate` cases with gates in [-1, 0] and `extreme` cases
/// with gates at -1e-8 and down to -3000 (none for iplr, which has no gate).
template <Scalar S> void gradients_hold(Rule r, int moderate, int extreme_cases) {
  for (bool extreme : {false, true}) {
    if (extreme && r == Rule::iplr)
      continue;
    prop_cases(name_of(r) + (extreme ? " extreme gates" : " moderate gates"),
               extreme ? extreme_cases : moderate, [r, extreme] {
                 const Case c = draw_case(r, 7, 3, *rc::gen::arbitrary<bool>(), extreme);
                 RC_LOG() << describe(c) << "\n";
                 std::string why;
                 const bool ok = gradients_agree<S>(c, why);
                 RC_LOG() << why;
                 RC_ASSERT(ok);
               });
  }
}

/// dplr (three parameterisations) and iplr: dq, dk, dv, dg, da, db, dh0 from the chunkwise
/// analytic backward equal dual numbers and finite differences over the recurrent form.
template <Scalar S> void dplr_gradients_equal_dual_and_finite_differences() {
  log_seed();
  for (Rule r : dplr_rules)
    gradients_hold<S>(r, 20, 8);
}

} // namespace ruleproof::lowrank_tests
