// ruleproof property tests of the low-rank rules: the chunkwise analytic backward against
// the gradient truth, two ways (exact dual numbers and finite differences with Richardson's
// error estimate, both over the recurrent form), in float128. Bounds: dplr_support.hpp.
#pragma once

#include "dplr_support.hpp"

namespace ruleproof::lowrank_tests {

/// \brief Checks every gradient of case c: analytic == dual == finite differences. Appends
/// one line per gradient to `why`.
inline bool gradients_agree(const Case &c, std::string &why) {
  using D = Dual<F128>;
  const Inputs<F128> in = make_inputs(c);
  const Options o = c.options();
  const Rule r = c.rule;
  const auto forward = [&](const Inputs<F128> &x) { return run(r, Form::recurrent, x, o); };
  const auto forward_d = [&](const Inputs<D> &x) { return run(r, Form::recurrent, x, o); };
  const Output<F128> out = forward(in);
  const Cotangents<F128> ct = make_cotangents(c, out);
  const Grads<F128> analytic = run_backward(r, in, ct, o);
  const Grads<F128> dual = dual_grads(in, ct, forward_d);
  const FiniteDifference<F128> fd = finite_difference_grads(in, ct, forward);

  // The magnitudes: the majorant's loss and its gradients (dplr_support.hpp).
  const Magnitudes m = magnitudes(c, in);
  Cotangents<F128> ct_abs = ct;
  make_abs(ct_abs.d_o);
  make_abs(ct_abs.d_ht);
  const Inputs<F128> maj = majorant_inputs(r, in);
  const auto majorant = [&](const Inputs<D> &x) { return majorant_forward(r, x, o); };
  const Grads<F128> maj_grads = dual_grads(maj, ct_abs, majorant);
  const F128 loss_mag = loss(m.maj, ct_abs);
  // M'_g: 2 sum_{s >= t} sum_x |x_s| M'_x,s (+ the final state's term), over every decayed x.
  Tensor<F128> g_mag;
  if (!in.g.empty()) {
    g_mag = Tensor<F128>(in.g.shape());
    const std::size_t G = in.g.dim(3);
    const auto add = [&](const Tensor<F128> &x, const Tensor<F128> &dx) {
      if (x.empty() || x.dim(3) != G)
        return;
      for (std::size_t i = 0; i < x.size(); ++i) {
        using std::abs;
        g_mag[i] += F128(2) * abs(x[i]) * abs(dx[i]);
      }
    };
    if (r == Rule::gated_oja) {
      add(in.v, maj_grads.dv);
      add(m.maj.o, ct_abs.d_o); // o . dO
      add(in.v, maj_grads.dv);  // v enters on both sides of the identity
      add(in.v, maj_grads.dv);
    } else {
      add(in.q, maj_grads.dq);
      add(in.k, maj_grads.dk);
      add(in.a, maj_grads.da);
      add(in.b, maj_grads.db);
    }
    for (const Sequence &seq : sequences_of(c.B, c.T, o))
      for (std::size_t h = 0; h < c.H; ++h) {
        std::vector<F128> suffix(G, F128(0));
        for (std::size_t j = 0; j < G; ++j) // the final state's term, at every step
          for (std::size_t i = 0; i < (r == Rule::gated_oja ? c.K : c.V); ++i) {
            using std::abs;
            const std::size_t kk = r == Rule::gated_oja ? i : j, vv = r == Rule::gated_oja ? j : i;
            suffix[j] +=
                abs(m.maj.final_state(seq.index, h, kk, vv) * ct_abs.d_ht(seq.index, h, kk, vv));
          }
        for (std::size_t t = seq.end; t-- > seq.begin;)
          for (std::size_t j = 0; j < G; ++j) {
            suffix[j] += g_mag(seq.batch, t, h, j);
            g_mag(seq.batch, t, h, j) = suffix[j];
          }
      }
  }

  const double L = static_cast<double>(longest(c));
  const double n_back = 2 * m.n + L + 10;
  const F128 step0 = cbrt(scalar_traits<F128>::epsilon());
  const F128 rounding =
      F128(2) * gamma(m.n + static_cast<double>(ct.d_o.size() + ct.d_ht.size())) * loss_mag;
  bool ok = true;
  for (const auto &f : grad_fields<F128>()) {
    const Tensor<F128> &x = in.*f.input;
    if (x.empty())
      continue;
    const std::string what = std::string("d") + f.name;
    const Tensor<F128> &mag = f.input == &Inputs<F128>::g ? g_mag : maj_grads.*f.grad;
    const F128 dual_bound = bound_of(n_back, 1, max_abs(mag), 1);
    const F128 analytic_bound = bound_of(n_back, m.kappa * m.kappa, max_abs(mag), 2);
    // analytic against dual: the analytic form's bound plus the dual's.
    ok &= agree(what + " analytic vs dual", analytic.*f.grad, dual.*f.grad,
                analytic_bound + dual_bound, why);
    // finite differences against dual: Richardson + rounding / h + the dual's bound.
    const Tensor<F128> &fdg = fd.grads.*f.grad, &err = fd.error.*f.grad;
    const Discrepancy d = compare(fdg, dual.*f.grad, [&](std::size_t i) {
      using std::abs;
      const F128 h = step0 * (abs(x[i]) > F128(1) ? abs(x[i]) : F128(1));
      return F128(err[i] + rounding / h + dual_bound);
    });
    std::ostringstream os;
    os << what << " fd vs dual: error/bound " << d.worst_over_bound << " (max abs "
       << d.max_abs_error << ")\n";
    why += os.str();
    ok &= d.holds();
  }
  return ok;
}

} // namespace ruleproof::lowrank_tests
