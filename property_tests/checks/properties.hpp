// ruleproof property checks: ONE implementation of each property, templated on the rule and
// the scalar. The Catch tests and `ruleproof verify` both reach it through run.hpp; it is
// instantiated once per scalar in run_<scalar>.cpp.
//
// Tolerances are derived from the precision, never typed in.
//
// Forward forms. Every output element of the GLA family is a sum of terms
// q~_c k_c v_j exp(sum of gates) (and h0 terms), computed through chains of rounded
// operations. With u the unit roundoff, a chain of n operations has relative error at most
// gamma_n = n u / (1 - n u) (Higham, Accuracy and Stability, 3.1), relative to the sum of
// the ABSOLUTE values of the terms. That sum is M, the same rule's recurrent form run on
// |q|, |k|, |v|, |h0| with the same gates (exp(g) > 0, so no term can cancel there). For
// normalised attention with phi >= 0, num and den have nonnegative terms except through v,
// so M is the normalised recurrent form on q, k, |v|, |h0|: |o - fl(o)| <= 2 gamma_n
// (num_abs / den) once both num and den carry gamma_n. Two forms each within gamma_n M of
// the truth differ by at most 2 gamma_n M.
//   n counts the longest chain: 3 per recurrent step (decay, multiply, add), 2K + 2V for the
// inner products and the two output products, 2C for a chunk's intra- and inter-chunk
// products, 10 spare, plus the exponentials: a cumulative log-decay G (up to
// Gmax = max |sum g| over a sequence) is summed with absolute error <= gamma_L Gmax, and
// exp turns an absolute error of its argument into the same relative error, so differences
// of two such sums add (2 L + 2) Gmax to n.
//   Underflow (extreme gates in double) adds an absolute error of at most n times the
// smallest normal number per element.
//
// Gradients, analytic (chunk_backward) against dual numbers (over the recurrent form).
// Every gradient of <dO, O> + <dS, S_T> is again a sum of such terms; its magnitude M' is
// the dual-number gradient of the same loss with |inputs| and |cotangents| (every
// derivative of a positive term is a positive term, and d/dg_t of a term exp(sum_R g)
// is that term when t is in R). For normalised attention the quotient rule gives
// |dO| dnum_abs / den + |dO| num_abs dden / den^2, computed with dual numbers on the
// un-normalised form [num | den]. The analytic dg sums q.dq - k.dk over s >= t, a
// difference whose terms are bounded by |q| M'_dq + |k| M'_dk summed the same way (plus
// |S_T| |dS_T| at the end): that is M'_dg. A backward pass chains a forward and a backward
// sweep and a reverse cumulative sum: n' = 2 n + L + 10, bound 2 gamma_n' M'.
//
// Finite differences against dual numbers: the Richardson estimate finite_difference_grads
// returns (truncation, |D(h) - D(2h)| / 3, plus its eps |L| / h), plus the rounding of the
// two loss evaluations relative to the loss magnitude, 2 gamma_n Lmag / h, with Lmag
// = <|dO|, M_o> + <|dS|, M_S> and h = eps^(1/3) max(1, |x|) as finite_difference_grads
// chooses it, plus the dual side's gamma_n' M'.
//
// The delta-rule family (rules::BoundFamily::contraction): the transition I - beta k k^T
// has entries of both signs, so the magnitude argument above does not hold; its bounds,
// from the contraction ||S_t|| <= ||S_0|| + sum beta ||k|| ||v|| and cond(I + A0) of the
// chunkwise solves, are derived in delta_bounds.hpp. The low-rank rules (dplr, iplr,
// gated_oja; BoundFamily::low_rank): a majorant recurrence with every term made nonnegative
// and cond_inf of the chunk's triangular system, derived in lowrank_bounds.hpp. Softmax
// attention (BoundFamily::softmax): the scores' absolute error turned into the
// probabilities' relative error, derived in softmax_bounds.hpp. forward_bound and
// gradient_bound below pick the family from the rule.
//
// Variants. A case carries the variant of its rule that the generators drew
// (generators.hpp, draw_variant): the delta rules' q, k normalised inside the op, beta up to 2
// and grouped value heads, softmax attention's ALiBi and rotary encodings. run_form and
// run_backward run the forms in it (the registry's rule itself where the case has none), and
// the bounds are derived for it.
#pragma once

#include <algorithm>
#include <functional>
#include <limits>
#include <optional>
#include <sstream>
#include <type_traits>

#include "case.hpp"
#include "delta_bounds.hpp"
#include "lowrank_bounds.hpp"
#include "measure.hpp"
#include "reference/core/compare.hpp"
#include "reference/core/gradients.hpp"
#include "reference/gla/recurrent.hpp"
#include "reference/linear_attn/features.hpp"
#include "reference/truth/forms.hpp"
#include "rounding.hpp"
#include "softmax_bounds.hpp"
#include "time_slices.hpp"

namespace ruleproof::checks {

template <class Rule> RuleInfo info_of() {
  RuleInfo r;
  r.id = Rule::id;
  const Signature sig = Rule::signature();
  r.gate = sig.gate;
  r.extra_state_columns = sig.extra_state_columns;
  r.positive_features = Rule::domain().positive_features;
  if constexpr (requires { Rule::variant; })
    r.features_may_be_negative = Rule::variant.map != linear_attn::FeatureMap::identity;
  r.has_beta = sig.has_beta, r.beta_low = sig.beta_low, r.beta_high = sig.beta_high;
  r.beta_high_open = sig.beta_high_open;
  if constexpr (requires { Rule::domain().normalised_keys; })
    r.normalised_keys = Rule::domain().normalised_keys;
  r.has_ab = sig.has_ab;
  r.normalised_values = Rule::domain().normalised_values;
  r.stateless = Rule::domain().stateless;
  r.optional_gate = Rule::domain().optional_gate;
  r.delta_variants = rules::bound_family_of<Rule>() == rules::BoundFamily::contraction;
  r.softmax_encodings = rules::bound_family_of<Rule>() == rules::BoundFamily::softmax;
  return r;
}

namespace detail {

template <class S> Tensor<S> tensor_of(const Shape &shape, const std::vector<double> &x) {
  if (x.empty() && element_count(shape) > 0)
    return Tensor<S>();
  Tensor<S> t(shape);
  for (std::size_t i = 0; i < t.size(); ++i)
    t[i] = from_double<S>(x[i]);
  return t;
}

/// The gate's shape; its heads are the value heads (the delta rules' grouped value heads).
inline Shape gate_shape(const Case &c) {
  const std::size_t HV = c.value_heads();
  switch (c.gate) {
  case GateKind::none: return {};
  case GateKind::scalar: return {c.B, c.T, HV};
  case GateKind::key: return {c.B, c.T, HV, c.K};
  case GateKind::value: return {c.B, c.T, HV, c.V};
  }
  return {};
}

template <class S> Inputs<S> inputs_of(const Case &c) {
  const std::size_t HV = c.value_heads();
  Inputs<S> in;
  in.q = tensor_of<S>({c.B, c.T, c.H, c.K}, c.q);
  in.k = tensor_of<S>({c.B, c.T, c.H, c.K}, c.k);
  in.v = tensor_of<S>({c.B, c.T, HV, c.V}, c.v);
  if (c.gate != GateKind::none)
    in.g = tensor_of<S>(gate_shape(c), c.g);
  if (c.has_beta)
    in.beta = tensor_of<S>({c.B, c.T, HV}, c.beta);
  if (c.has_h0)
    in.h0 = tensor_of<S>({c.sequences(), HV, c.K, c.state_columns}, c.h0);
  if (c.has_ab) {
    in.a = tensor_of<S>({c.B, c.T, c.H, c.K}, c.a);
    in.b = tensor_of<S>({c.B, c.T, c.H, c.K}, c.b);
  }
  return in;
}

template <class S> Cotangents<S> cotangents_of(const Case &c) {
  Cotangents<S> ct;
  ct.d_o = tensor_of<S>({c.B, c.T, c.value_heads(), c.V}, c.d_o);
  if (!c.d_ht.empty())
    ct.d_ht = tensor_of<S>({c.sequences(), c.value_heads(), c.K, c.state_columns}, c.d_ht);
  return ct;
}

inline Options options_of(const Case &c) {
  Options o;
  o.chunk_size = c.C;
  o.cu_seqlens = c.cu_seqlens;
  o.output_final_state = true;
  return o;
}

template <class S> void make_abs(Tensor<S> &t) {
  using std::abs;
  for (std::size_t i = 0; i < t.size(); ++i)
    t[i] = abs(t[i]);
}

/// The inputs whose forward pass is the magnitude M (see the top of this file).
template <class Rule, class S> Inputs<S> magnitude_inputs(Inputs<S> in) {
  if (Rule::signature().extra_state_columns == 0) {
    make_abs(in.q);
    make_abs(in.k);
  }
  make_abs(in.v);
  make_abs(in.h0);
  return in;
}

/// Longest sequence of the call.
inline std::size_t longest(const Case &c) { return longest_sequence(c.B, c.T, options_of(c)); }

/// Gmax: the largest |sum of g| over one sequence, head and gate column.
inline double largest_log_decay(const Case &c) {
  return checks::largest_log_decay(tensor_of<double>(gate_shape(c), c.g), options_of(c));
}

/// n, the depth of the longest chain of rounded operations of a forward form.
inline double forward_depth(const Case &c) {
  const double L = static_cast<double>(longest(c));
  const double K = static_cast<double>(c.K), V = static_cast<double>(c.state_columns);
  const double C = static_cast<double>(c.C);
  return 3 * L + 2 * K + 2 * V + 2 * C + 10 + (2 * L + 2) * largest_log_decay(c);
}

inline double backward_depth(const Case &c) {
  return 2 * forward_depth(c) + static_cast<double>(longest(c)) + 10;
}

/// factor * gamma_n * |M_i| + n * (smallest normal), element by element.
template <class S> Tensor<S> bound_from(const Tensor<S> &M, double n, double factor) {
  using std::abs;
  const S g = from_double<S>(factor) * checked_gamma<S>(n);
  const S floor = from_double<S>(n) * std::numeric_limits<S>::min();
  Tensor<S> b(M.shape());
  for (std::size_t i = 0; i < M.size(); ++i)
    b[i] = g * abs(M[i]) + floor;
  return b;
}

/// Compares both outputs of a form against the reference under element-wise bounds.
template <class S>
void measure_output(Measure &m, const Output<S> &a, const Output<S> &b, const Output<S> &bound) {
  measure(m, "o", a.o, b.o, bound.o);
  measure(m, "final_state", a.final_state, b.final_state, bound.final_state);
}

template <class Rule> constexpr bool is_family(rules::BoundFamily f) {
  return rules::bound_family_of<Rule>() == f;
}
template <class Rule> constexpr bool is_contraction() {
  return is_family<Rule>(rules::BoundFamily::contraction);
}

/// The delta family's variant: the rule's signature's, with the case's (q, k normalised
/// inside the op, beta in (0, 2)).
template <class Rule> kda::Variant delta_variant(const Case &c) {
  kda::Variant var;
  var.use_qk_l2norm = c.qk_l2norm;
  var.allow_neg_eigval = c.neg_eigval || Rule::signature().beta_high > 1;
  return var;
}

/// Softmax attention's encoding: the rule's, with the case's ALiBi and rotary encodings.
template <class Rule> softmax_attn::Encoding softmax_encoding(const Case &c) {
  softmax_attn::Encoding enc = Rule::encoding;
  if (c.has_encoding()) {
    enc.alibi_slope = c.alibi_slope;
    enc.rope_qk = c.rope_qk;
    enc.rope_vo = c.rope_vo;
    enc.rope_base = Case::rope_base;
  }
  return enc;
}

/// \brief The forms of Rule in the case's variant: the registry's rule itself, or, for a
/// delta rule with q, k normalised inside the op or beta up to 2, kda's family driver with
/// that variant (what the registry's delta rules call with the default one), and for softmax
/// attention with an encoding, its forms with that encoding. X: the scalar, or dual numbers.
/// (Form: the registry's, reference/rule_id.hpp.)
template <Form F, class Rule, class X>
Output<X> run_form(const Inputs<X> &x, const Options &o, const Case &c) {
  if constexpr (is_contraction<Rule>()) {
    if (c.has_delta_variant()) {
      const GateKind gate = Rule::signature().gate;
      const kda::Variant var = delta_variant<Rule>(c);
      if constexpr (F == Form::recurrent)
        return kda::family::recurrent(x, o, gate, var);
      else if constexpr (F == Form::parallel)
        return kda::family::parallel(x, o, gate, var);
      else
        return kda::family::chunk(x, o, gate, var);
    }
  } else if constexpr (is_family<Rule>(rules::BoundFamily::softmax)) {
    if (c.has_encoding()) {
      const softmax_attn::Encoding enc = softmax_encoding<Rule>(c);
      if constexpr (F == Form::recurrent)
        return softmax_attn::recurrent(x, o, enc);
      else if constexpr (F == Form::parallel)
        return softmax_attn::parallel(x, o, enc);
      else
        return softmax_attn::chunk(x, o, enc);
    }
  }
  if constexpr (F == Form::recurrent)
    return Rule::recurrent(x, o);
  else if constexpr (F == Form::parallel)
    return Rule::parallel(x, o);
  else
    return Rule::chunk(x, o);
}

/// The same with the form chosen at run time.
template <class Rule, class X>
Output<X> run_form(Form f, const Inputs<X> &x, const Options &o, const Case &c) {
  switch (f) {
  case Form::recurrent: return run_form<Form::recurrent, Rule>(x, o, c);
  case Form::parallel: return run_form<Form::parallel, Rule>(x, o, c);
  case Form::chunk: return run_form<Form::chunk, Rule>(x, o, c);
  }
  return {};
}

/// The chunkwise analytic backward of Rule in the case's variant (as run_form).
template <class Rule, class S>
Grads<S> run_backward(const Inputs<S> &x, const Cotangents<S> &ct, const Options &o,
                      const Case &c) {
  if constexpr (is_contraction<Rule>()) {
    if (c.has_delta_variant())
      return kda::family::chunk_backward(x, ct, o, Rule::signature().gate, delta_variant<Rule>(c));
  } else if constexpr (is_family<Rule>(rules::BoundFamily::softmax)) {
    if (c.has_encoding())
      return softmax_attn::chunk_backward(x, ct, o, softmax_encoding<Rule>(c));
  }
  return Rule::chunk_backward(x, ct, o);
}

/// The options a form's bound is derived for: the parallel form is one chunk as long as the
/// longest sequence; the chunkwise form has the case's chunk size (and the recurrent form
/// none: any width bounds it).
inline Options bound_options(const Options &opts, Form f, const Case &c) {
  Options o = opts;
  if (f == Form::parallel)
    o.chunk_size = std::max<std::size_t>(longest(c), 1);
  return o;
}

/// \brief Element-wise bounds on the difference of a forward form of Rule on `in` from the
/// recurrent form, both computed in S, the form's width given by `opts` (bound_options: the
/// chunk size, the whole sequence for the parallel form): o and final_state, shaped like the
/// outputs `like`.
template <class Rule, class S>
Output<S> forward_bound(const Inputs<S> &in, const Options &opts, const Case &c,
                        const Output<S> &like) {
  if constexpr (is_contraction<Rule>()) {
    // kappa covers chunk size opts.chunk_size and the whole sequence (delta_bounds.hpp).
    const delta::Magnitudes m =
        delta::magnitudes(in, opts, Rule::signature().gate, delta_variant<Rule>(c));
    const delta::ForwardBound<S> b = delta::forward_bound<S>(
        delta::forward_ops(in.q.dim(1), opts.chunk_size, in.q.dim(3), in.v.dim(3)), m);
    const S floor = from_double<S>(forward_depth(c)) * std::numeric_limits<S>::min();
    return {Tensor<S>(like.o.shape(), S(b.o + floor)),
            Tensor<S>(like.final_state.shape(), S(b.state + floor))};
  } else if constexpr (is_family<Rule>(rules::BoundFamily::low_rank)) {
    // kappa covers chunk size opts.chunk_size and the whole sequence, which as one chunk
    // bounds every sub-chunk (lowrank_bounds.hpp).
    const lowrank::ForwardBound<S> b =
        lowrank::forward_bound(lowrank::magnitudes(Rule::id, in, opts));
    return {Tensor<S>(like.o.shape(), b.o), Tensor<S>(like.final_state.shape(), b.state)};
  } else if constexpr (is_family<Rule>(rules::BoundFamily::softmax)) {
    return {softmax::forward_bound(in, opts, softmax_encoding<Rule>(c)).output, Tensor<S>()};
  } else {
    const Output<S> mag = Rule::recurrent(magnitude_inputs<Rule>(in), opts);
    const double n = forward_depth(c);
    return {bound_from(mag.o, n, 2), bound_from(mag.final_state, n, 2)};
  }
}

/// Calls fn(form, run) for the three forward forms of Rule in S, in the case's variant.
template <class Rule, class S, class Fn> void for_each_form(const Case &c, Fn fn) {
  for (Form f : {Form::recurrent, Form::parallel, Form::chunk})
    fn(f, [f, &c](const Inputs<S> &x, const Options &o) { return run_form<Rule>(f, x, o, c); });
}

} // namespace detail

// ---------------------------------------------------------------------------------------
// The properties.

/// parallel == recurrent and chunk(C) == recurrent, output and final state, each within the
/// bound of its own width (bound_options).
template <class Rule, class S> Report check_forms_agree(const Case &c) {
  using namespace detail;
  const Inputs<S> in = inputs_of<S>(c);
  const Options opts = options_of(c);
  const Output<S> rec = run_form<Rule>(Form::recurrent, in, opts, c);
  Report r;
  for_each_form<Rule, S>(c, [&](Form f, auto form) {
    if (f == Form::recurrent)
      return;
    Measure m{std::string(name_of(f)), "recurrent"};
    measure_output(m, form(in, opts), rec,
                   forward_bound<Rule>(in, bound_options(opts, f, c), c, rec));
    r.measures.push_back(m);
  });
  return r;
}

/// With cu_seqlens, each form equals the same form run on each sequence alone, bit for bit:
/// every form runs one head of one sequence at a time (reference/core/heads.hpp).
template <class Rule, class S> Report check_varlen(const Case &c) {
  using namespace detail;
  const Inputs<S> in = inputs_of<S>(c);
  const Options opts = options_of(c);
  Options alone_opts = opts;
  alone_opts.cu_seqlens.clear();
  Report r;
  for_each_form<Rule, S>(c, [&](Form f, auto form) {
    const Output<S> full = form(in, opts);
    Output<S> expected{Tensor<S>(full.o.shape()), Tensor<S>(full.final_state.shape())};
    for (std::size_t s = 0; s + 1 < c.cu_seqlens.size(); ++s) {
      const auto begin = static_cast<std::size_t>(c.cu_seqlens[s]);
      Inputs<S> one = time_slice(in, begin, static_cast<std::size_t>(c.cu_seqlens[s + 1]));
      one.h0 = state_slice(in.h0, s);
      const Output<S> alone = form(one, alone_opts);
      put_time_slice(expected.o, alone.o, begin);
      put_state_slice(expected.final_state, alone.final_state, s);
    }
    Measure m{std::string(name_of(f)), std::string(name_of(f)) + " on each sequence alone"};
    measure_identical(m, "o", full.o, expected.o);
    measure_identical(m, "final_state", full.final_state, expected.final_state);
    r.measures.push_back(m);
  });
  return r;
}

/// Steps [0, P) from h0, then [P, T) from the first part's final state, equal one run.
template <class Rule, class S> Report check_halves(const Case &c) {
  using namespace detail;
  const Inputs<S> in = inputs_of<S>(c);
  const Options opts = options_of(c);
  Report r;
  for_each_form<Rule, S>(c, [&](Form f, auto form) {
    const Output<S> whole = form(in, opts);
    const Output<S> bound = forward_bound<Rule>(in, bound_options(opts, f, c), c, whole);
    const Output<S> first = form(time_slice(in, 0, c.split), opts);
    Inputs<S> rest = time_slice(in, c.split, c.T);
    rest.h0 = first.final_state;
    const Output<S> second = form(rest, opts);
    Output<S> joined{Tensor<S>(whole.o.shape()), second.final_state};
    put_time_slice(joined.o, first.o, 0);
    put_time_slice(joined.o, second.o, c.split);
    Measure m{std::string(name_of(f)), std::string(name_of(f)) + " in one run"};
    measure_output(m, joined, whole, bound);
    r.measures.push_back(m);
  });
  return r;
}

/// Inputs at t >= P replaced: outputs at t < P identical, bit for bit, in every form.
template <class Rule, class S> Report check_causality(const Case &c) {
  using namespace detail;
  const Inputs<S> in = inputs_of<S>(c);
  const Inputs<S> changed = with_later_inputs(in, inputs_of<S>(late_case(c)), c.split);
  const Options opts = options_of(c);
  Report r;
  for_each_form<Rule, S>(c, [&](Form f, auto form) {
    Measure m{std::string(name_of(f)), std::string(name_of(f)) + " with inputs at t >= P changed"};
    measure_identical(m, "o[t < P]", time_slice(form(changed, opts).o, 0, c.split),
                      time_slice(form(in, opts).o, 0, c.split));
    r.measures.push_back(m);
  });
  return r;
}

/// The gradient magnitudes M' (see the top of this file), one per input.
template <class Rule, class S>
Grads<S> gradient_magnitude(const Inputs<S> &in, const Cotangents<S> &ct, const Options &opts) {
  using namespace detail;
  using D = Dual<S>;
  Cotangents<S> cta = ct;
  make_abs(cta.d_o);
  make_abs(cta.d_ht);
  const Inputs<S> x = magnitude_inputs<Rule>(in);
  if constexpr (requires { Rule::variant; }) {
    if (Rule::variant.normalised) {
      // The un-normalised form on [|v| | 1]: its output is [num_abs | den].
      const linear_attn::Variant plain{false, Rule::variant.map};
      const std::size_t B = in.v.dim(0), T = in.v.dim(1), H = in.v.dim(2), V = in.v.dim(3);
      Inputs<S> y = x;
      y.v = Tensor<S>({B, T, H, V + 1}, S(1));
      for (std::size_t i = 0; i < B * T * H; ++i)
        for (std::size_t j = 0; j < V; ++j)
          y.v[i * (V + 1) + j] = x.v[i * V + j];
      const auto forward_s = [&](const Inputs<S> &z) {
        return forward_heads(z, opts, Signature{}, [&](const Head<S> &h, const S &scale) {
          return gla::recurrent_head(linear_attn::as_gla(h, plain), scale);
        });
      };
      const auto forward_d = [&](const Inputs<D> &z) {
        return forward_heads(z, opts, Signature{}, [&](const Head<D> &h, const D &scale) {
          return gla::recurrent_head(linear_attn::as_gla(h, plain), scale);
        });
      };
      const Output<S> nd = forward_s(y);
      Cotangents<S> cty;
      cty.d_o = Tensor<S>(nd.o.shape());
      cty.d_ht = cta.d_ht;
      for (std::size_t i = 0; i < B * T * H; ++i) {
        const S den = nd.o[i * (V + 1) + V];
        S dden(0);
        for (std::size_t j = 0; j < V; ++j) {
          cty.d_o[i * (V + 1) + j] = cta.d_o[i * V + j] / den;
          dden += cta.d_o[i * V + j] * nd.o[i * (V + 1) + j] / (den * den);
        }
        cty.d_o[i * (V + 1) + V] = dden;
      }
      Grads<S> gy = dual_grads(y, cty, forward_d);
      Tensor<S> dv({B, T, H, V}); // drop the column of ones
      for (std::size_t i = 0; i < B * T * H; ++i)
        for (std::size_t j = 0; j < V; ++j)
          dv[i * V + j] = gy.dv[i * (V + 1) + j];
      gy.dv = dv;
      return gy;
    }
  }
  Grads<S> m = dual_grads(x, cta, [&](const Inputs<D> &z) { return Rule::recurrent(z, opts); });
  if (!in.g.empty()) {
    // M'_dg: the analytic dg sums q.dq - k.dk over s >= t, plus |S_T| |dS_T| at the end.
    const Output<S> mag = Rule::recurrent(x, opts);
    const std::size_t B = in.q.dim(0), T = in.q.dim(1), H = in.q.dim(2), K = in.q.dim(3);
    const std::size_t VS = mag.final_state.dim(3);
    const bool per_key = in.g.rank() == 4;
    Tensor<S> dg(in.g.shape());
    for (const Sequence &s : sequences_of(B, T, opts))
      for (std::size_t h = 0; h < H; ++h) {
        std::vector<S> acc(K, S(0));
        for (std::size_t key = 0; key < K; ++key)
          for (std::size_t j = 0; j < VS && !cta.d_ht.empty(); ++j)
            acc[key] += mag.final_state(s.index, h, key, j) * cta.d_ht(s.index, h, key, j);
        for (std::size_t t = s.end; t-- > s.begin;) {
          S total(0);
          for (std::size_t key = 0; key < K; ++key) {
            acc[key] += x.q(s.batch, t, h, key) * m.dq(s.batch, t, h, key) +
                        x.k(s.batch, t, h, key) * m.dk(s.batch, t, h, key);
            if (per_key)
              dg(s.batch, t, h, key) = std::max(acc[key], m.dg(s.batch, t, h, key));
            total += acc[key];
          }
          if (!per_key)
            dg(s.batch, t, h) = std::max(total, m.dg(s.batch, t, h));
        }
      }
    m.dg = dg;
  }
  return m;
}

/// The gradient bounds of Rule's family (see the top of this file and delta_bounds.hpp).
template <class Rule, class S>
GradientBound<S> gradient_bound(const Inputs<S> &in, const Cotangents<S> &ct, const Options &opts,
                                const Case &c) {
  using namespace detail;
  GradientBound<S> b;
  if constexpr (is_contraction<Rule>()) {
    const delta::Magnitudes m =
        delta::magnitudes(in, opts, Rule::signature().gate, delta_variant<Rule>(c));
    const delta::GradientBound<S> db = delta::gradient_bound<S>(
        delta::forward_ops(in.q.dim(1), opts.chunk_size, in.q.dim(3), in.v.dim(3)), m, ct);
    for (const auto &f : grad_fields<S>()) {
      b.dual.*f.grad = Tensor<S>((in.*f.input).shape(), db.grads);
      b.analytic.*f.grad = b.dual.*f.grad;
    }
    b.rounding = db.rounding;
  } else if constexpr (is_family<Rule>(rules::BoundFamily::low_rank)) {
    const lowrank::Rule r = Rule::id;
    b = lowrank::gradient_bound(r, in, ct, opts, lowrank::magnitudes(r, in, opts));
  } else if constexpr (is_family<Rule>(rules::BoundFamily::softmax)) {
    b = softmax::gradient_bound(in, ct, opts, softmax_encoding<Rule>(c));
  } else {
    const Grads<S> mag = gradient_magnitude<Rule>(in, ct, opts);
    const double n = forward_depth(c), nb = backward_depth(c);
    for (const auto &f : grad_fields<S>()) {
      const Tensor<S> &dual = b.dual.*f.grad = bound_from(mag.*f.grad, nb, 1); // gamma_n' M'
      Tensor<S> &both = b.analytic.*f.grad = dual;
      for (std::size_t i = 0; i < both.size(); ++i)
        both[i] += dual[i]; // 2 gamma_n' M'
    }
    // Lmag = <|dO|, M_o> + <|dS|, M_S>
    Cotangents<S> cta = ct;
    make_abs(cta.d_o);
    make_abs(cta.d_ht);
    const S loss_mag = loss(Rule::recurrent(magnitude_inputs<Rule>(in), opts), cta);
    b.rounding = from_double<S>(2) *
                 checked_gamma<S>(n + static_cast<double>(ct.d_o.size() + ct.d_ht.size())) *
                 loss_mag;
  }
  return b;
}

/// chunk_backward == dual numbers (exact derivatives of the recurrent form) == central
/// finite differences of the recurrent form, for every gradient.
template <class Rule, class S> Report check_gradients(const Case &c) {
  using namespace detail;
  using D = Dual<S>;
  using std::cbrt;
  const Inputs<S> in = inputs_of<S>(c);
  const Cotangents<S> ct = cotangents_of<S>(c);
  const Options opts = options_of(c);
  const Grads<S> analytic = run_backward<Rule>(in, ct, opts, c);
  const Grads<S> dual = dual_grads(
      in, ct, [&](const Inputs<D> &x) { return run_form<Form::recurrent, Rule>(x, opts, c); });
  const FiniteDifference<S> fd = finite_difference_grads(
      in, ct, [&](const Inputs<S> &x) { return run_form<Form::recurrent, Rule>(x, opts, c); });
  const GradientBound<S> bound = gradient_bound<Rule>(in, ct, opts, c);
  const S step0 = cbrt(scalar_traits<S>::epsilon());

  Report r;
  Measure an{"chunk_backward", "dual numbers"}, fdm{"finite_difference", "dual numbers"};
  Measure an_fd{"chunk_backward", "finite differences"};
  const auto in_fields = grad_fields<S>();
  for (const auto &f : in_fields) {
    const Tensor<S> &x = in.*f.input;
    if (x.empty())
      continue;
    const std::string what = std::string("d") + f.name;
    const Tensor<S> &a = analytic.*f.grad, &d = dual.*f.grad, &fdg = fd.grads.*f.grad;
    const Tensor<S> &dual_bound = bound.dual.*f.grad, &both = bound.analytic.*f.grad;
    Tensor<S> fd_bound = dual_bound, fd_only(x.shape());
    for (std::size_t i = 0; i < x.size(); ++i) {
      using std::abs;
      const S h = step0 * (abs(x[i]) > S(1) ? abs(x[i]) : S(1));
      fd_only[i] = (fd.error.*f.grad)[i] + bound.rounding / h;
      fd_bound[i] = dual_bound[i] + fd_only[i];
    }
    measure(an, what, a, d, both);
    measure(fdm, what, fdg, d, fd_bound);
    Tensor<S> an_fd_bound = fd_bound;
    for (std::size_t i = 0; i < x.size(); ++i)
      an_fd_bound[i] = both[i] + fd_only[i];
    measure(an_fd, what, a, fdg, an_fd_bound);
  }
  r.measures = {an, fdm, an_fd};
  return r;
}

/// Runs property p for Rule in S.
template <class Rule, class S> Report check(Property p, const Case &c) {
  if (!applies(p, info_of<Rule>())) {
    Report r;
    r.applicable = false;
    return r;
  }
  switch (p) {
  case Property::forms_agree: return check_forms_agree<Rule, S>(c);
  case Property::varlen: return check_varlen<Rule, S>(c);
  case Property::halves: return check_halves<Rule, S>(c);
  case Property::causality: return check_causality<Rule, S>(c);
  case Property::causality_extreme_gates: return check_causality<Rule, S>(c);
  case Property::gradients: return check_gradients<Rule, S>(c);
  case Property::gradients_extreme_gates: return check_gradients<Rule, S>(c);
  case Property::extreme_gates: return check_forms_agree<Rule, S>(c);
  }
  return {};
}

/// Runs property p for the rule called `rule` in S when that rule is of bound family F; nothing
/// otherwise. Instantiated once per scalar and family (run_family.hpp).
template <class S, rules::BoundFamily F>
std::optional<Report> run_check_in_family(Property p, const std::string &rule, const Case &c) {
  std::optional<Report> r;
  rules::for_each_rule([&](auto tag) {
    using Rule = decltype(tag);
    if constexpr (rules::bound_family_of<Rule>() == F)
      if (!r && Rule::name() == rule)
        r = check<Rule, S>(p, c);
  });
  return r;
}

} // namespace ruleproof::checks
