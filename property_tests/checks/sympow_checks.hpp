// ruleproof property checks for sympow (symmetric power attention, seed 004), one row of
// `ruleproof verify` per variant (plain, fixed rotary, scalar gating, data-dependent
// rotation, gating and rotation) and power p (normalised for even p, plain for odd):
//   forms agree:  attention == recurrent == chunk (outputs and final states), within
//                 2 gamma_n M, element by element (reference/sympow/bounds.hpp: M the
//                 magnitude of the terms, computed on this input);
//   gradients:    attention_backward == dual numbers (exact derivatives of the attention
//                 form) within 2 gamma_n' M' (bounds.hpp); finite differences == dual within
//                 the Richardson estimate, plus the rounding of the two loss evaluations
//                 2 gamma_n Lmag / h, plus the dual side's gamma_n' M'.
// Instantiated once per scalar in run_sympow.cpp.
#pragma once

#include <cmath>
#include <string>

#include "case.hpp"
#include "reference/core/compare.hpp"
#include "reference/core/gradients.hpp"
#include "reference/sympow/bounds.hpp"
#include "reference/sympow/sympow.hpp"

namespace ruleproof::checks::sympow_checks {

template <class S> Tensor<S> tensor_of(const Shape &shape, const std::vector<double> &x) {
  Tensor<S> t(shape);
  for (std::size_t i = 0; i < t.size(); ++i)
    t[i] = from_double<S>(x[i]);
  return t;
}

template <class S> Inputs<S> inputs_of(const Case &c) {
  Inputs<S> in;
  in.q = tensor_of<S>({c.B, c.T, c.H, c.K}, c.q);
  in.k = tensor_of<S>({c.B, c.T, c.H, c.K}, c.k);
  in.v = tensor_of<S>({c.B, c.T, c.H, c.V}, c.v);
  if (c.gate == GateKind::scalar)
    in.g = tensor_of<S>({c.B, c.T, c.H}, c.g);
  if (c.has_beta)
    in.beta = tensor_of<S>({c.B, c.T, c.H}, c.beta);
  return in;
}

inline sympow::SympowOptions options_of(const Case &c) {
  sympow::SympowOptions o;
  o.p = c.power;
  o.normalize = c.normalise;
  o.rotary_base = c.rotary_base;
  o.chunk_size = c.C;
  o.cu_seqlens = c.cu_seqlens;
  o.output_final_state = true;
  return o;
}

/// Compares a against the reference b under an element-wise bound, into a Measure.
template <class S>
void measure(Measure &m, const std::string &what, const Tensor<S> &a, const Tensor<S> &b,
             const Tensor<S> &bound) {
  if (a.shape() != b.shape() || bound.shape() != b.shape()) {
    m.finite = false;
    m.where = what + ": shape " + shape_string(a.shape()) + " vs " + shape_string(b.shape()) +
              ", bound " + shape_string(bound.shape());
    return;
  }
  const Discrepancy d = compare(a, b, [&](std::size_t i) { return bound[i]; });
  m.elements += a.size();
  std::ostringstream os;
  os.precision(17);
  if (!d.finite) {
    m.finite = false;
    os << what << "[" << d.worst_index << "] not finite: " << d.value_a << " vs " << d.value_b;
    m.where = os.str();
    m.set_worst(what, a.shape(), d.worst_index, d.worst_error,
                bound.size() ? to_double(bound[d.worst_index]) : 0.0);
    m.worst_ratio = std::numeric_limits<double>::infinity();
    return;
  }
  m.worst_rel = std::max(m.worst_rel, d.max_rel_error);
  if (d.worst_over_bound > m.worst_ratio || (m.where.empty() && d.worst_over_bound > 0)) {
    m.worst_ratio = d.worst_over_bound;
    os << what << "[" << d.worst_index << "] = " << d.value_a << " vs " << d.value_b << " (bound "
       << to_double(bound.size() ? bound[d.worst_index] : S(0)) << ")";
    m.where = os.str();
    m.set_worst(what, a.shape(), d.worst_index, d.worst_error,
                to_double(bound.size() ? bound[d.worst_index] : S(0)));
  }
}

/// attention == recurrent and chunk == recurrent, outputs and final states.
template <class S> Report check_forms_agree(const Case &c) {
  const sympow::SympowOptions o = options_of(c);
  const Inputs<S> in = inputs_of<S>(c);
  const Output<S> rec = sympow::recurrent(in, o);
  const sympow::ForwardBound<S> fb = sympow::forward_bound(in, o);
  Report r;
  for (sympow::Form f : {sympow::Form::attention, sympow::Form::chunk}) {
    const Output<S> out = sympow::forward(f, in, o);
    Measure m{sympow::name_of(f), "recurrent"};
    measure(m, "o", out.o, rec.o, fb.o);
    measure(m, "final_state", out.final_state, rec.final_state, fb.final_state);
    r.measures.push_back(m);
  }
  return r;
}

/// attention_backward == dual numbers == central finite differences of the attention form.
template <class S> Report check_gradients(const Case &c) {
  using std::abs;
  using std::cbrt;
  sympow::SympowOptions o = options_of(c);
  o.output_final_state = false; // attention_backward differentiates <dO, O>
  const Inputs<S> in = inputs_of<S>(c);
  Cotangents<S> ct;
  ct.d_o = tensor_of<S>(in.v.shape(), c.d_o);
  const auto forward = [&o](const auto &x) { return sympow::attention(x, o); };
  const Grads<S> analytic = sympow::attention_backward(in, ct, o);
  const Grads<S> dual = dual_grads(in, ct, forward);
  const FiniteDifference<S> fd = finite_difference_grads(in, ct, forward);
  const sympow::BackwardBound<S> bb = sympow::backward_bound(in, ct, o); // 2 gamma_n' M'
  const S rounding = S(2) * gamma_n<S>(bb.n_forward) * bb.loss_magnitude;
  const S step0 = cbrt(scalar_traits<S>::epsilon());
  Measure an{"attention_backward", "dual numbers"}, fdm{"finite_difference", "dual numbers"};
  Measure an_fd{"attention_backward", "finite differences"};
  for (const auto &f : grad_fields<S>()) {
    const Tensor<S> &x = in.*f.input;
    if (x.empty())
      continue;
    const std::string what = std::string("d") + f.name;
    const Tensor<S> &both = bb.grads.*f.grad;
    Tensor<S> fd_bound(x.shape()), an_fd_bound(x.shape());
    for (std::size_t i = 0; i < x.size(); ++i) {
      const S h = step0 * (abs(x[i]) > S(1) ? abs(x[i]) : S(1));
      const S fd_only = (fd.error.*f.grad)[i] + rounding / h;
      fd_bound[i] = fd_only + both[i] / S(2);
      an_fd_bound[i] = fd_only + both[i];
    }
    measure(an, what, analytic.*f.grad, dual.*f.grad, both);
    measure(fdm, what, fd.grads.*f.grad, dual.*f.grad, fd_bound);
    measure(an_fd, what, analytic.*f.grad, fd.grads.*f.grad, an_fd_bound);
  }
  Report r;
  r.measures = {an, fdm, an_fd};
  return r;
}

template <class S> Report check(Property p, const Case &c) {
  switch (p) {
  case Property::forms_agree: return check_forms_agree<S>(c);
  case Property::gradients: return check_gradients<S>(c);
  default: break;
  }
  Report r;
  r.applicable = false;
  return r;
}

} // namespace ruleproof::checks::sympow_checks
