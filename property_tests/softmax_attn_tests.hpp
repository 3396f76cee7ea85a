// Properties of softmax attention (reference/softmax_attn), as templates over the scalar;
// softmax_attn_tests_<scalar>.cpp states them in one scalar each. Tolerances: the one
// derivation in checks/softmax_bounds.hpp (shared with the property checks of `ruleproof
// verify`): the scores' absolute error turned into the probabilities' relative error.
#pragma once

#include <rapidcheck/catch.h>

#include "checks/generators.hpp"
#include "checks/softmax_bounds.hpp"

#include "reference/core/compare.hpp"
#include "reference/core/gradients.hpp"
#include "reference/softmax_attn/softmax_attn.hpp"

namespace ruleproof::softmax_tests {

struct SoftmaxCase {
  std::size_t B, T, H, K, V, C;
  softmax_attn::Encoding enc;
  bool gated;
  std::vector<std::int64_t> cu_seqlens;
  std::vector<double> q, k, v, g, d_o;
};

inline std::ostream &operator<<(std::ostream &os, const SoftmaxCase &c) {
  os << "B=" << c.B << " T=" << c.T << " H=" << c.H << " K=" << c.K << " V=" << c.V << " C=" << c.C
     << " alibi=" << c.enc.alibi_slope << " rope_qk=" << c.enc.rope_qk
     << " rope_vo=" << c.enc.rope_vo << " gated=" << c.gated << " cu_seqlens=[";
  for (auto x : c.cu_seqlens)
    os << x << ' ';
  os << "]\n q=";
  for (double x : c.q)
    os << x << ' ';
  os << "\n k=";
  for (double x : c.k)
    os << x << ' ';
  os << "\n v=";
  for (double x : c.v)
    os << x << ' ';
  os << "\n g=";
  for (double x : c.g)
    os << x << ' ';
  return os;
}

using checks::gen::size_in; // a size in [lo, hi], whatever the RapidCheck size

/// m/8, m in [-8, 8]: exact in every scalar type.
inline rc::Gen<std::vector<double>> values(std::size_t n, int lo = -8, int hi = 8) {
  return rc::gen::container<std::vector<double>>(
      n, rc::gen::map(rc::gen::resize(100, rc::gen::inRange(lo, hi + 1)),
                      [](int m) { return m / 8.0; }));
}

inline rc::Gen<SoftmaxCase> cases(bool varlen) {
  return rc::gen::exec([varlen] {
    SoftmaxCase c;
    c.B = varlen ? 1 : *size_in(1, 2);
    c.H = *size_in(1, 2);
    c.K = 2 * *size_in(1, 2);
    c.V = 2 * *size_in(1, 2);
    c.T = *size_in(varlen ? 0 : 1, 12);
    c.C = *size_in(1, c.T + 2);
    c.enc.alibi_slope = *size_in(0, 4) / 8.0;
    c.enc.rope_qk = *rc::gen::arbitrary<bool>();
    c.enc.rope_vo = *rc::gen::arbitrary<bool>();
    c.enc.rope_base = 100;
    c.gated = *rc::gen::arbitrary<bool>();
    if (varlen) {
      c.cu_seqlens = {0};
      const std::size_t N = *size_in(1, 4);
      for (std::size_t n = 0; n + 1 < N; ++n)
        c.cu_seqlens.push_back(c.cu_seqlens.back() +
                               static_cast<std::int64_t>(*size_in(0, c.T)) % (c.T + 1));
      std::sort(c.cu_seqlens.begin(), c.cu_seqlens.end());
      for (auto &x : c.cu_seqlens)
        x = std::min<std::int64_t>(x, c.T);
      c.cu_seqlens.push_back(c.T);
    }
    const std::size_t rows = c.B * c.T * c.H;
    c.q = *values(rows * c.K);
    c.k = *values(rows * c.K);
    c.v = *values(rows * c.V);
    c.g = c.gated ? *values(rows, -16, -1) : std::vector<double>();
    c.d_o = *values(rows * c.V);
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
  if (c.gated)
    in.g = tensor<S>({c.B, c.T, c.H}, c.g);
  return in;
}

inline Options options_of(const SoftmaxCase &c) {
  Options o;
  o.chunk_size = c.C;
  o.cu_seqlens = c.cu_seqlens;
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

template <Scalar S> void softmax_recurrent_parallel_and_chunk_forms_agree_any_chunk_size() {
  rc::prop("every encoding, every chunk size", [] {
    log_seed();
    const SoftmaxCase c = *cases(false);
    RC_LOG() << c << "\n";
    const Inputs<S> in = inputs_of<S>(c);
    const Options opts = options_of(c);
    const checks::softmax::ForwardBound<S> b = bounds_of<S>(c);
    const auto bound = [&](std::size_t i) { return b.output[i]; };
    const Tensor<S> truth = softmax_attn::recurrent(in, opts, c.enc).o;
    expect_holds("parallel", compare(softmax_attn::parallel(in, opts, c.enc).o, truth, bound));
    expect_holds("chunk", compare(softmax_attn::chunk(in, opts, c.enc).o, truth, bound));
  });
}

template <Scalar S> void softmax_alibi_slope_m_equals_constant_gate_exp_minus_m() {
  rc::prop("ALiBi as scalar gating", [] {
    log_seed();
    SoftmaxCase c = *cases(false);
    c.gated = false;
    c.g.clear();
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

template <Scalar S> void softmax_varlen_equals_each_sequence_alone() {
  rc::prop("cu_seqlens, empty sequences included", [] {
    log_seed();
    const SoftmaxCase c = *cases(true);
    RC_LOG() << c << "\n";
    const Inputs<S> in = inputs_of<S>(c);
    const Tensor<S> packed = softmax_attn::chunk(in, options_of(c), c.enc).o;
    for (std::size_t n = 0; n + 1 < c.cu_seqlens.size(); ++n) {
      const std::size_t t0 = c.cu_seqlens[n], t1 = c.cu_seqlens[n + 1];
      Inputs<S> one;
      const auto cut = [&](const Tensor<S> &x) {
        if (x.empty())
          return Tensor<S>();
        Shape shape = x.shape();
        shape[1] = t1 - t0;
        Tensor<S> y(shape);
        const std::size_t row = element_count(Shape(x.shape().begin() + 2, x.shape().end()));
        std::copy(x.data() + t0 * row, x.data() + t1 * row, y.data());
        return y;
      };
      one.q = cut(in.q), one.k = cut(in.k), one.v = cut(in.v), one.g = cut(in.g);
      Options o;
      o.chunk_size = c.C;
      const Tensor<S> alone = softmax_attn::chunk(one, o, c.enc).o;
      RC_ASSERT(identical(alone, cut(packed)));
    }
  });
}

template <Scalar S> void softmax_later_inputs_leave_earlier_outputs_bitwise_unchanged() {
  rc::prop("causality, every form", [] {
    log_seed();
    const SoftmaxCase c = *cases(false);
    const std::size_t P = *size_in(0, c.T);
    RC_LOG() << c << "\nP=" << P << "\n";
    const Inputs<S> in = inputs_of<S>(c);
    Inputs<S> changed = in;
    for (Tensor<S> *x : {&changed.q, &changed.k, &changed.v, &changed.g})
      for (std::size_t i = 0; i < x->size(); ++i) {
        const std::size_t t =
            (i / element_count(Shape(x->shape().begin() + 2, x->shape().end()))) % c.T;
        if (t >= P)
          (*x)[i] = x == &changed.g ? S(-3) : S(7) - (*x)[i];
      }
    const Options opts = options_of(c);
    const auto early = [&](const Tensor<S> &o) {
      Tensor<S> e({c.B, P, c.H, c.V});
      for (std::size_t b = 0; b < c.B; ++b)
        for (std::size_t t = 0; t < P; ++t)
          for (std::size_t h = 0; h < c.H; ++h)
            for (std::size_t d = 0; d < c.V; ++d)
              e(b, t, h, d) = o(b, t, h, d);
      return e;
    };
    RC_ASSERT(identical(early(softmax_attn::recurrent(in, opts, c.enc).o),
                        early(softmax_attn::recurrent(changed, opts, c.enc).o)));
    RC_ASSERT(identical(early(softmax_attn::parallel(in, opts, c.enc).o),
                        early(softmax_attn::parallel(changed, opts, c.enc).o)));
    RC_ASSERT(identical(early(softmax_attn::chunk(in, opts, c.enc).o),
                        early(softmax_attn::chunk(changed, opts, c.enc).o)));
  });
}

template <Scalar S> void softmax_analytic_backward_equals_dual_numbers_equals_finite_differences() {
  rc::prop("dq, dk, dv, dg", [] {
    log_seed();
    SoftmaxCase c = *cases(false);
    c.T = std::min<std::size_t>(c.T, 6);
    const std::size_t rows = c.B * c.T * c.H;
    c.q.resize(rows * c.K), c.k.resize(rows * c.K), c.v.resize(rows * c.V);
    c.d_o.resize(rows * c.V);
    if (c.gated)
      c.g.resize(rows);
    RC_LOG() << c << "\n";
    const Inputs<S> in = inputs_of<S>(c);
    const Options opts = options_of(c);
    Cotangents<S> ct;
    ct.d_o = tensor<S>({c.B, c.T, c.H, c.V}, c.d_o);
    const auto forward = [&](const auto &x) { return softmax_attn::recurrent(x, opts, c.enc); };
    const Grads<S> analytic = softmax_attn::chunk_backward(in, ct, opts, c.enc);
    const Grads<S> exact = dual_grads(in, ct, forward);
    const FiniteDifference<S> fd = finite_difference_grads(in, ct, forward);
    // The bounds: checks/softmax_bounds.hpp (analytic vs dual, the loss's rounding).
    const checks::GradientBound<S> bound = checks::softmax::gradient_bound(in, ct, opts, c.enc);
    for (const auto &f : grad_fields<S>()) {
      if ((analytic.*f.grad).empty())
        continue;
      RC_LOG() << f.name << "\n";
      const Tensor<S> &allowed = bound.analytic.*f.grad, &dual_allowed = bound.dual.*f.grad;
      expect_holds("analytic vs dual", compare(analytic.*f.grad, exact.*f.grad,
                                               [&](std::size_t i) { return allowed[i]; }));
      const Tensor<S> &err = fd.error.*f.grad, &x = in.*f.input;
      const auto fd_bound = [&](std::size_t i) {
        using std::abs;
        using std::cbrt;
        const S h = cbrt(scalar_traits<S>::epsilon()) * (abs(x[i]) > S(1) ? S(abs(x[i])) : S(1));
        return S(err[i] + bound.rounding / h + dual_allowed[i]);
      };
      expect_holds("finite differences vs dual",
                   compare(fd.grads.*f.grad, exact.*f.grad, fd_bound));
    }
  });
}

} // namespace ruleproof::softmax_tests
