// ruleproof sympow properties, templated on the scalar; each sympow_*.cpp states them in one
// scalar type. Tolerances come from reference/sympow/bounds.hpp (gamma_n times a magnitude
// computed on this input) or, for the embedding and rotation identities, from the bound
// written beside each property; none is typed in.
#pragma once

#include <rapidcheck/catch.h>

#include <sstream>

#include "reference/core/compare.hpp"
#include "reference/core/gradients.hpp"
#include "reference/sympow/bounds.hpp"
#include "reference/sympow/sympow.hpp"

namespace ruleproof::sympow::test {

/// The variants of DESIGN.md's table, by what they are given.
enum class Variant { plain, rotary, gated, rates, conformal };
inline const char *name_of(Variant v) {
  switch (v) {
  case Variant::plain: return "plain";
  case Variant::rotary: return "fixed_rotary";
  case Variant::gated: return "gated";
  case Variant::rates: return "data_dependent_rotation";
  case Variant::conformal: return "gated_and_data_dependent_rotation";
  }
  return "?";
}
inline bool rotates(Variant v) {
  return v == Variant::rotary || v == Variant::rates || v == Variant::conformal;
}
inline bool gates(Variant v) { return v == Variant::gated || v == Variant::conformal; }
inline bool has_rates(Variant v) { return v == Variant::rates || v == Variant::conformal; }

/// An integer in [lo, hi], the whole range at every test size (gen::inRange scales).
inline int draw(int lo, int hi) { return *rc::gen::resize(100, rc::gen::inRange(lo, hi + 1)); }

/// A real in [lo, hi] on a grid of 2^-20 (exact in every scalar; shrinks toward lo).
inline double draw_real(double lo, double hi) {
  const int steps = 1 << 20;
  return lo + (hi - lo) * static_cast<double>(draw(0, steps)) / steps;
}

/// One random call, as doubles (exact in S).
struct Case {
  std::size_t B = 1, T = 0, H = 1, K = 2, V = 1, C = 1;
  std::vector<std::int64_t> cu_seqlens;
  std::vector<double> q, k, v, g, beta, prefix_k, prefix_v;
  double rotary_base = 0;
  bool with_h0 = false, has_g = false, has_beta = false;
  std::string show() const {
    std::ostringstream s;
    s << "B=" << B << " T=" << T << " H=" << H << " K=" << K << " V=" << V << " C=" << C
      << " N=" << rotary_base << " h0=" << with_h0 << " cu_seqlens=[";
    for (auto c : cu_seqlens)
      s << c << ' ';
    const auto list = [&](const char *n, const std::vector<double> &x) {
      s << "\n" << n << " =";
      for (double e : x)
        s << ' ' << e;
    };
    s << "]";
    list("q", q), list("k", k), list("v", v), list("g", g), list("beta", beta);
    list("prefix_k", prefix_k), list("prefix_v", prefix_v);
    return s.str();
  }
};

inline std::vector<double> reals(std::size_t n, double lo, double hi) {
  std::vector<double> x(n);
  for (auto &e : x)
    e = draw_real(lo, hi);
  return x;
}

/// Draws a call of variant v: T in 0..max_T (8), chunk size 1..T+1 (T rarely a multiple), K in 1..4
/// (even when rotating), ragged cu_seqlens with empty sequences, sometimes an initial state.
inline Case draw_case(Variant v, int max_T = 8, bool allow_h0 = true) {
  Case c;
  c.K =
      rotates(v) ? 2 * static_cast<std::size_t>(draw(1, 2)) : static_cast<std::size_t>(draw(1, 4));
  c.V = static_cast<std::size_t>(draw(1, 3));
  c.H = static_cast<std::size_t>(draw(1, allow_h0 ? 2 : 1));
  c.T = static_cast<std::size_t>(draw(0, max_T));
  c.C = static_cast<std::size_t>(draw(1, static_cast<int>(c.T) + 1));
  if (draw(0, 2) == 0) { // varlen
    c.B = 1;
    c.cu_seqlens = {0};
    while (c.cu_seqlens.back() < static_cast<std::int64_t>(c.T))
      c.cu_seqlens.push_back(draw(static_cast<int>(c.cu_seqlens.back()), static_cast<int>(c.T)));
    if (c.cu_seqlens.size() == 1)
      c.cu_seqlens.push_back(0);
  } else {
    c.B = static_cast<std::size_t>(draw(1, 2));
  }
  const std::size_t n = c.B * c.T * c.H;
  c.q = reals(n * c.K, -1, 1);
  c.k = reals(n * c.K, -1, 1);
  c.v = reals(n * c.V, -1, 1);
  c.has_g = gates(v);
  c.has_beta = has_rates(v);
  if (gates(v))
    c.g = reals(n, -1, 0);
  if (has_rates(v))
    c.beta = reals(n, 0, 2); // the seed's 1 + tanh(.) range
  if (rotates(v))
    c.rotary_base = draw_real(2, 1000);
  c.with_h0 = allow_h0 && draw(0, 2) == 0;
  if (c.with_h0) { // the state of an unrotated random prefix of 2 steps, per sequence and head
    const std::size_t N = c.cu_seqlens.empty() ? c.B : c.cu_seqlens.size() - 1;
    c.prefix_k = reals(N * 2 * c.H * c.K, -1, 1);
    c.prefix_v = reals(N * 2 * c.H * c.V, -1, 1);
  }
  return c;
}

template <class S>
Tensor<S> tensor_of(const Shape &shape, const std::vector<double> &x, bool present = true) {
  if (!present)
    return Tensor<S>();
  Tensor<S> t(shape);
  for (std::size_t i = 0; i < t.size(); ++i)
    t[i] = from_double<S>(x[i]);
  return t;
}

template <class S> SympowOptions options_of(const Case &c, int p, bool normalize) {
  SympowOptions o;
  o.p = p;
  o.normalize = normalize;
  o.rotary_base = c.rotary_base;
  o.chunk_size = c.C;
  o.cu_seqlens = c.cu_seqlens;
  o.output_final_state = true;
  return o;
}

template <class S> Inputs<S> inputs_of(const Case &c, const SympowOptions &o) {
  Inputs<S> in;
  in.q = tensor_of<S>({c.B, c.T, c.H, c.K}, c.q);
  in.k = tensor_of<S>({c.B, c.T, c.H, c.K}, c.k);
  in.v = tensor_of<S>({c.B, c.T, c.H, c.V}, c.v);
  in.g = tensor_of<S>({c.B, c.T, c.H}, c.g, c.has_g);
  in.beta = tensor_of<S>({c.B, c.T, c.H}, c.beta, c.has_beta);
  if (c.with_h0) { // run the plain recurrent form over the prefix and keep its state
    const std::size_t N = c.cu_seqlens.empty() ? c.B : c.cu_seqlens.size() - 1;
    SympowOptions po = o;
    po.rotary_base = 0;
    po.theta.clear();
    po.cu_seqlens.clear();
    po.output_final_state = true;
    Inputs<S> pre;
    pre.q = tensor_of<S>({N, 2, c.H, c.K}, c.prefix_k);
    pre.k = pre.q;
    pre.v = tensor_of<S>({N, 2, c.H, c.V}, c.prefix_v);
    in.h0 = recurrent(pre, po).final_state;
  }
  return in;
}

/// Checks a against the reference b within an element-wise bound; logs the worst element.
template <class S>
bool within(const std::string &what, const Tensor<S> &a, const Tensor<S> &b,
            const Tensor<S> &bound) {
  const Discrepancy d = compare(a, b, [&](std::size_t i) { return bound[i]; });
  if (d.undecided > 0)
    RC_LOG() << what << ": " << d.undecided << " elements beyond the precision (bound infinite)\n";
  if (!d.holds())
    RC_LOG() << what << ": finite=" << d.finite << " worst/bound=" << d.worst_over_bound << " at "
             << d.worst_index << " (" << d.value_a << " vs " << d.value_b << ", max abs err "
             << d.max_abs_error << ")\n";
  return d.holds();
}

/// The powers each variant is checked at, with the normalisations they allow.
inline std::vector<std::pair<int, bool>> powers() {
  return {{1, false}, {2, true}, {2, false}, {3, false}, {4, true}, {4, false}, {6, true}};
}

/// attention == recurrent == chunked (outputs and final states) for variant v and every p.
template <Scalar S> void forms_agree(Variant v) {
  const std::uint64_t seed = rc::detail::configuration().testParams.seed;
  INFO("RapidCheck seed " << seed << ": replay with RC_PARAMS=\"seed=" << seed << "\"");
  rc::prop(std::string("attention_equals_recurrent_equals_chunked/") + name_of(v), [v, seed] {
    RC_LOG() << "seed=" << seed << "\n";
    const Case c = draw_case(v);
    RC_LOG() << c.show() << "\n";
    for (const auto &[p, normalize] : powers()) {
      const SympowOptions o = options_of<S>(c, p, normalize);
      const Inputs<S> in = inputs_of<S>(c, o);
      const Output<S> a = attention(in, o), r = recurrent(in, o), ch = chunk(in, o);
      const ForwardBound<S> fb = forward_bound(in, o);
      RC_LOG() << "p=" << p << " normalize=" << normalize << " n=" << fb.n << "\n";
      RC_ASSERT(within("attention vs recurrent, o", a.o, r.o, fb.o));
      RC_ASSERT(within("chunk vs recurrent, o", ch.o, r.o, fb.o));
      RC_ASSERT(within("attention vs recurrent, final state", a.final_state, r.final_state,
                       fb.final_state));
      RC_ASSERT(
          within("chunk vs recurrent, final state", ch.final_state, r.final_state, fb.final_state));
    }
  });
}

} // namespace ruleproof::sympow::test
