// Softmax attention's own property (reference/softmax_attn): ALiBi with slope m is scalar
// gating by exp(-m), as a template over the scalar; softmax_attn_tests_<scalar>.cpp states it
// in one scalar each. The properties every rule has (forms agree, varlen, causality, extreme
// gates, gradients) are stated once for every rule in properties_<scalar>.cpp
// (checks/properties.hpp), softmax attention's with its encodings drawn per case (ALiBi,
// rotary q, k and v, o, the gate bias). Tolerance: the one derivation in
// checks/softmax_bounds.hpp: the scores' absolute error turned into the probabilities'
// relative error.
#pragma once

#include <rapidcheck/catch.h>

#include "checks/generators.hpp"
#include "checks/softmax_bounds.hpp"

#include "reference/core/compare.hpp"
#include "reference/softmax_attn/softmax_attn.hpp"

namespace ruleproof::softmax_tests {

/// A case of the ALiBi property: no gate (ALiBi's bias becomes the gate), every encoding.
struct SoftmaxCase {
  std::size_t B, T, H, K, V, C;
  softmax_attn::Encoding enc;
  std::vector<double> q, k, v;
};

inline std::ostream &operator<<(std::ostream &os, const SoftmaxCase &c) {
  os << "B=" << c.B << " T=" << c.T << " H=" << c.H << " K=" << c.K << " V=" << c.V << " C=" << c.C
     << " alibi=" << c.enc.alibi_slope << " rope_qk=" << c.enc.rope_qk
     << " rope_vo=" << c.enc.rope_vo << "\n q=";
  for (double x : c.q)
    os << x << ' ';
  os << "\n k=";
  for (double x : c.k)
    os << x << ' ';
  os << "\n v=";
  for (double x : c.v)
    os << x << ' ';
  return os;
}

using checks::gen::size_in; // a size in [lo, hi], whatever the RapidCheck size

/// m/8, m in [-8, 8]: exact in every scalar type.
inline rc::Gen<std::vector<double>> values(std::size_t n) {
  return rc::gen::container<std::vector<double>>(
      n,
      rc::gen::map(rc::gen::resize(100, rc::gen::inRange(-8, 9)), [](int m) { return m / 8.0; }));
}

inline rc::Gen<SoftmaxCase> cases() {
  return rc::gen::exec([] {
    SoftmaxCase c;
    c.B = *size_in(1, 2);
    c.H = *size_in(1, 2);
    c.K = 2 * *size_in(1, 2);
    c.V = 2 * *size_in(1, 2);
    c.T = *size_in(1, 12);
    c.C = *size_in(1, c.T + 2);
    c.enc.alibi_slope = *size_in(0, 4) / 8.0;
    c.enc.rope_qk = *rc::gen::arbitrary<bool>();
    c.enc.rope_vo = *rc::gen::arbitrary<bool>();
    c.enc.rope_base = 100;
    const std::size_t rows = c.B * c.T * c.H;
    c.q = *values(rows * c.K);
    c.k = *values(rows * c.K);
    c.v = *values(rows * c.V);
    return c;
  });
}

template <Scalar S> Tensor<S> tensor(const Shape &shape, const std::vector<double> &x) {
  Tensor<S> t(shape);
  for (std::size_t i = 0; i < t.size(); ++i)
    t[i] = from_double<S>(x[i]);
  return t;
}

template <Scalar S> Inputs<S> inputs_of(const SoftmaxCase &c) {
  Inputs<S> in;
  in.q = tensor<S>({c.B, c.T, c.H, c.K}, c.q);
  in.k = tensor<S>({c.B, c.T, c.H, c.K}, c.k);
  in.v = tensor<S>({c.B, c.T, c.H, c.V}, c.v);
  return in;
}

inline Options options_of(const SoftmaxCase &c) {
  Options o;
  o.chunk_size = c.C;
  return o;
}

/// The forward bound of a case (checks/softmax_bounds.hpp).
template <Scalar S> checks::softmax::ForwardBound<S> bounds_of(const SoftmaxCase &c) {
  return checks::softmax::forward_bound(inputs_of<S>(c), options_of(c), c.enc);
}

inline void log_seed() {
  const auto seed = rc::detail::configuration().testParams.seed;
  RC_LOG() << "RapidCheck seed " << seed << " (replay: RC_PARAMS=\"seed=" << seed << "\")\n";
}

inline void expect_holds(const char *what, const Discrepancy &d) {
  RC_LOG() << what << ": max |a - b| = " << d.max_abs_error << ", worst / bound "
           << d.worst_over_bound << " at element " << d.worst_index << " (" << d.value_a << " vs "
           << d.value_b << ")\n";
  RC_ASSERT(d.holds());
}

template <Scalar S> void softmax_alibi_slope_m_equals_constant_gate_exp_minus_m() {
  rc::prop("ALiBi as scalar gating", [] {
    log_seed();
    const SoftmaxCase c = *cases();
    RC_LOG() << c << "\n";
    const Inputs<S> in = inputs_of<S>(c);
    const Options opts = options_of(c);
    softmax_attn::Encoding no_alibi = c.enc;
    no_alibi.alibi_slope = 0;
    Inputs<S> gated = in;
    gated.g = Tensor<S>({c.B, c.T, c.H}, S(-c.enc.alibi_slope)); // b_ij = prod exp(-m)
    const checks::softmax::ForwardBound<S> b = bounds_of<S>(c);
    expect_holds("alibi vs gate", compare(softmax_attn::parallel(gated, opts, no_alibi).o,
                                          softmax_attn::parallel(in, opts, c.enc).o,
                                          [&](std::size_t i) { return b.output[i]; }));
  });
}

} // namespace ruleproof::softmax_tests
