// ruleproof property checks for sympow (symmetric power attention, seed 004), one row of
// `ruleproof verify` per variant (plain, fixed rotary, scalar gating, data-dependent
// rotation, gating and rotation) and power p (normalised for even p, plain for odd), each
// property of case.hpp in every form (attention, recurrent, chunk):
//   forms agree:  attention == recurrent == chunk (outputs and final states), within
//                 2 gamma_n M, element by element (reference/sympow/bounds.hpp: M the
//                 magnitude of the terms, computed on this input);
//   varlen:       with cu_seqlens, each form equals the same form on each sequence alone, bit
//                 for bit (every form runs one head of one sequence at a time);
//   halves:       steps [0, P), then [P, T) from the first part's final state H = [S^T | Z^T]
//                 and, when rotating, its final angle mu_P (final_angles), equal one run within
//                 the one run's 2 gamma_n M: the angles of the second part are those of the one
//                 run bit for bit (the same sums), and each part's chain of rounded operations
//                 (the first part's sums over time, the state's inner product with phi^p(Q'),
//                 the second part's sums) is no longer than the one run's n;
//   causality:    inputs at t >= P (q, k, v eight times as large, gates, rates) replaced leave
//                 the outputs at t < P bit for bit as they were;
//   (varlen and causality compare bit for bit every output the precision decides: a row whose
//   derived bound is +infinity, gamma_n kappa_i >= 1, may compute its normalised denominator
//   phi^p(Q')^T Z as 0 by cancellation, 0/0 in every run; such rows are undecided, as in the
//   bounded comparisons);
//   extreme gates (gated variants): log-gates in {-1e-8, -60, -3000} mixed, the forms agree
//                 (finite, within the same derived bound), causality holds bitwise and the
//                 gradients agree, as for the rules of rules::All;
//   gradients:    attention_backward == dual numbers (exact derivatives of the attention
//                 form) within 2 gamma_n' M' (bounds.hpp); finite differences == dual within
//                 the Richardson estimate, plus the rounding of the two loss evaluations
//                 2 gamma_n Lmag / h, plus the dual side's gamma_n' M'.
// Instantiated once per scalar in run_sympow.cpp.
#pragma once

#include <cmath>
#include <string>

#include "case.hpp"
#include "measure.hpp"
#include "reference/core/compare.hpp"
#include "reference/core/gradients.hpp"
#include "reference/sympow/bounds.hpp"
#include "reference/sympow/sympow.hpp"
#include "time_slices.hpp"

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

using detail::measure;
using detail::measure_identical;

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

/// The three forms, as the properties walk them.
inline constexpr sympow::Form all_forms[] = {sympow::Form::attention, sympow::Form::recurrent,
                                             sympow::Form::chunk};

/// With cu_seqlens, each form equals the same form run on each sequence alone, bit for bit.
template <class S> Report check_varlen(const Case &c) {
  const sympow::SympowOptions o = options_of(c);
  sympow::SympowOptions alone_opts = o;
  alone_opts.cu_seqlens.clear();
  const Inputs<S> in = inputs_of<S>(c);
  const sympow::ForwardBound<S> fb = sympow::forward_bound(in, o); // where o is decided
  Report r;
  for (sympow::Form f : all_forms) {
    const Output<S> full = sympow::forward(f, in, o);
    Output<S> expected{Tensor<S>(full.o.shape()), Tensor<S>(full.final_state.shape())};
    for (std::size_t s = 0; s + 1 < c.cu_seqlens.size(); ++s) {
      const auto begin = static_cast<std::size_t>(c.cu_seqlens[s]);
      const Inputs<S> one = time_slice(in, begin, static_cast<std::size_t>(c.cu_seqlens[s + 1]));
      const Output<S> alone = sympow::forward(f, one, alone_opts);
      put_time_slice(expected.o, alone.o, begin);
      detail::put_state_slice(expected.final_state, alone.final_state, s);
    }
    Measure m{sympow::name_of(f), std::string(sympow::name_of(f)) + " on each sequence alone"};
    measure_identical(m, "o", full.o, expected.o, fb.o);
    measure_identical(m, "final_state", full.final_state, expected.final_state);
    r.measures.push_back(m);
  }
  return r;
}

/// Steps [0, P), then [P, T) from the first part's final state and final angle (H, mu_P),
/// equal one run within the one run's bound (see the top of this file).
template <class S> Report check_halves(const Case &c) {
  const sympow::SympowOptions o = options_of(c);
  const Inputs<S> in = inputs_of<S>(c);
  const sympow::ForwardBound<S> fb = sympow::forward_bound(in, o);
  const Inputs<S> first_in = time_slice(in, 0, c.split);
  const Tensor<S> mu_P = sympow::final_angles(first_in, o); // empty when not rotating
  Report r;
  for (sympow::Form f : all_forms) {
    const Output<S> whole = sympow::forward(f, in, o);
    const Output<S> first = sympow::forward(f, first_in, o);
    Inputs<S> rest = time_slice(in, c.split, c.T);
    rest.h0 = first.final_state;
    const Output<S> second = sympow::forward(f, rest, o, mu_P);
    Tensor<S> joined(whole.o.shape());
    put_time_slice(joined, first.o, 0);
    put_time_slice(joined, second.o, c.split);
    Measure m{sympow::name_of(f), std::string(sympow::name_of(f)) + " in one run"};
    measure(m, "o", joined, whole.o, fb.o);
    measure(m, "final_state", second.final_state, whole.final_state, fb.final_state);
    r.measures.push_back(m);
  }
  return r;
}

/// Inputs at t >= P replaced: outputs at t < P identical, bit for bit, in every form.
template <class S> Report check_causality(const Case &c) {
  const sympow::SympowOptions o = options_of(c);
  const Inputs<S> in = inputs_of<S>(c);
  const Inputs<S> changed = with_later_inputs(in, inputs_of<S>(late_case(c)), c.split);
  const Tensor<S> decided = time_slice(sympow::forward_bound(in, o).o, 0, c.split);
  Report r;
  for (sympow::Form f : all_forms) {
    Measure m{sympow::name_of(f),
              std::string(sympow::name_of(f)) + " with inputs at t >= P changed"};
    measure_identical(m, "o[t < P]", time_slice(sympow::forward(f, changed, o).o, 0, c.split),
                      time_slice(sympow::forward(f, in, o).o, 0, c.split), decided);
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

/// Runs property p in S; a property that says nothing about the row (not_applicable) reports so.
template <class S> Report check(Property p, const RuleInfo &row, const Case &c) {
  Report r;
  if (!applies(p, row)) {
    r.applicable = false;
    return r;
  }
  switch (p) {
  case Property::forms_agree: return check_forms_agree<S>(c);
  case Property::varlen: return check_varlen<S>(c);
  case Property::halves: return check_halves<S>(c);
  case Property::causality: return check_causality<S>(c);
  case Property::gradients: return check_gradients<S>(c);
  case Property::extreme_gates: return check_forms_agree<S>(c);
  case Property::causality_extreme_gates: return check_causality<S>(c);
  case Property::gradients_extreme_gates: return check_gradients<S>(c);
  }
  return r;
}

} // namespace ruleproof::checks::sympow_checks
