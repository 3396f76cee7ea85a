// ruleproof property checks: RapidCheck generators of test cases, one per property, shared
// by the Catch tests (which shrink through them) and `ruleproof verify` (which draws from
// them with a seed of its own and shrinks the same way).
//
// Every size is drawn explicitly in a fixed range (gen::resize pins the RapidCheck size, so
// gen::inRange spans its whole range whatever the test size). Values are dyadic rationals
// m/8, exact in every scalar type; each generator shrinks towards the simplest value
// (0, 1/8, g = -1/8, length 0, chunk size 1).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <rapidcheck.h>

#include "case.hpp"

namespace ruleproof::checks::gen {

/// A size in [lo, hi], both ends included, independent of the RapidCheck size.
inline rc::Gen<std::size_t> size_in(std::size_t lo, std::size_t hi) {
  return rc::gen::resize(100, rc::gen::inRange<std::size_t>(lo, hi + 1));
}

/// \brief cu_seqlens cutting one row of T steps into sequences at up to `max_cuts` offsets
/// drawn in [0, T] (so empty sequences come up), shrinking towards no cut. Called inside a
/// property or gen::exec, as the test supports draw their cases.
inline std::vector<std::int64_t> cut_into_sequences(std::size_t T, std::size_t max_cuts = 3) {
  const std::size_t cuts = *size_in(0, max_cuts);
  std::vector<std::int64_t> offsets{0, static_cast<std::int64_t>(T)};
  for (std::size_t i = 0; i < cuts; ++i)
    offsets.push_back(static_cast<std::int64_t>(*size_in(0, T)));
  std::sort(offsets.begin(), offsets.end());
  return offsets;
}

/// m/8 for m in [-8, 8], shrinking towards 0 through 1/8, -1/8, 2/8, ...
inline rc::Gen<double> signed_value() {
  return rc::gen::map(size_in(0, 16), [](std::size_t i) {
    const double m = static_cast<double>((i + 1) / 2);
    return i == 0 ? 0.0 : (i % 2 ? m : -m) / 8.0;
  });
}

/// m/8 for m in [1, 8], shrinking towards 1/8.
inline rc::Gen<double> positive_value() {
  return rc::gen::map(size_in(0, 7), [](std::size_t i) { return static_cast<double>(i + 1) / 8; });
}

/// +-m/8 for m in [1, 8]: never zero, so feature maps are never evaluated at a kink.
inline rc::Gen<double> nonzero_value() {
  return rc::gen::map(size_in(0, 15), [](std::size_t i) {
    const double m = static_cast<double>(i / 2 + 1) / 8;
    return i % 2 ? -m : m;
  });
}

/// A log-gate g = -m/8 for m in [1, 24]: strictly negative.
inline rc::Gen<double> gate_value() {
  return rc::gen::map(size_in(0, 23),
                      [](std::size_t i) { return -static_cast<double>(i + 1) / 8; });
}

/// A log-gate at one of the two extremes: barely decaying or decaying by e^-60 a step.
inline rc::Gen<double> extreme_gate_value() { return rc::gen::element(-1e-8, -60.0); }

inline rc::Gen<std::vector<double>> values(std::size_t n, rc::Gen<double> value) {
  return rc::gen::container<std::vector<double>>(n, std::move(value));
}

/// q or k for this rule: any sign for plain rules; for normalised attention phi(q)^T z must
/// stay away from zero, so either every entry is positive (identity map) or entries are
/// nonzero with the first feature of every row positive (elu+1, relu: phi >= 0 and the
/// first feature keeps phi(q)^T phi(k) >= 1/64).
inline std::vector<double> features(const RuleInfo &r, std::size_t K, std::size_t n) {
  if (!r.positive_features)
    return *values(n, signed_value());
  if (!r.features_may_be_negative)
    return *values(n, positive_value());
  std::vector<double> x = *values(n, nonzero_value());
  for (std::size_t i = 0; i < n; i += K)
    x[i] = std::abs(x[i]);
  return x;
}

inline std::size_t gate_count(const Case &c) {
  switch (c.gate) {
  case GateKind::none: return 0;
  case GateKind::scalar: return c.B * c.T * c.H;
  case GateKind::key: return c.B * c.T * c.H * c.K;
  case GateKind::value: return c.B * c.T * c.H * c.V;
  }
  return 0;
}

/// beta in the rule's range (beta_low, beta_high]: beta_low + (beta_high - beta_low) m/8 for
/// m in [1, 8], shrinking towards m = 1. `interior` (and an open range): m <= 7, so that
/// finite differences (steps of 2 eps^(1/3)) stay inside the range.
inline std::vector<double> betas(const RuleInfo &r, std::size_t n, bool interior) {
  const std::size_t top = interior || r.beta_high_open ? 7 : 8;
  return *values(n, rc::gen::map(size_in(1, top), [r](std::size_t m) {
                   return r.beta_low + (r.beta_high - r.beta_low) * static_cast<double>(m) / 8;
                 }));
}

/// x scaled to |x_i| <= 1/D, so that every row of D entries has ||x||_2 <= 1/sqrt(D) <= 1.
inline std::vector<double> in_unit_ball(std::vector<double> x, std::size_t D) {
  for (double &e : x)
    e /= static_cast<double>(D);
  return x;
}

/// k for this rule: features, scaled to |k_i| <= 1/K (so ||k||_2 <= 1) for normalised keys.
inline std::vector<double> keys(const RuleInfo &r, std::size_t K, std::size_t n) {
  std::vector<double> k = features(r, K, n);
  return r.normalised_keys ? in_unit_ball(std::move(k), K) : k;
}

/// v for this rule: m/8, scaled to |v_j| <= 1/V (so ||v||_2 <= 1) for normalised values
/// (gated_oja: then I - beta v v^T with beta in (0, 1] is a contraction).
inline std::vector<double> values_of(const RuleInfo &r, std::size_t V, std::size_t n) {
  std::vector<double> v = *values(n, signed_value());
  return r.normalised_values ? in_unit_ball(std::move(v), V) : v;
}

/// One of the low-rank pair a, b (dplr, iplr): m/8 scaled to rows of norm <= 1, so that
/// a_t^T b_t is in [-1, 1] and every step's transition has norm at most 2.
inline std::vector<double> low_rank_rows(std::size_t K, std::size_t n) {
  return in_unit_ball(*values(n, signed_value()), K);
}

/// Draws q, k, v, g (extreme or ordinary), beta, the initial state and the low-rank pair
/// once the shape is set. A rule whose gate is optional has none in half the ordinary cases.
inline void draw_values(Case &c, const RuleInfo &r, bool extreme, bool interior_beta = false) {
  const std::size_t rows = c.B * c.T * c.H;
  if (r.optional_gate && !extreme && *rc::gen::arbitrary<bool>())
    c.gate = GateKind::none;
  c.q = features(r, c.K, rows * c.K);
  c.k = keys(r, c.K, rows * c.K);
  c.v = values_of(r, c.V, rows * c.V);
  c.g = *values(gate_count(c), extreme ? extreme_gate_value() : gate_value());
  c.has_beta = r.has_beta;
  if (r.has_beta)
    c.beta = betas(r, rows, interior_beta);
  c.has_h0 = !r.stateless && *rc::gen::arbitrary<bool>();
  if (c.has_h0) {
    const std::size_t n = c.sequences() * c.H * c.K * c.state_columns;
    c.h0 = *values(n, signed_value());
    if (c.state_columns > c.V) // z, the running sum of phi(k), starts positive
      for (std::size_t i = c.state_columns - 1; i < n; i += c.state_columns)
        c.h0[i] = std::abs(c.h0[i]) + 0.125;
  }
  c.has_ab = r.has_ab;
  if (r.has_ab) {
    c.a = low_rank_rows(c.K, rows * c.K);
    c.b = low_rank_rows(c.K, rows * c.K);
  }
}

/// A real in [lo, hi] on a grid of (hi - lo) 2^-16, shrinking towards lo.
inline rc::Gen<double> grid_value(double lo, double hi) {
  return rc::gen::map(size_in(0, 1 << 16), [lo, hi](std::size_t m) {
    return lo + (hi - lo) * static_cast<double>(m) / 65536.0;
  });
}

/// +-(1 - m 2^-16) for m in [0, 2^16 - 1]: never zero, shrinking towards +-1. Finer than
/// m/8 and never zero: sympow's normalised denominator of row i is a sum of (q'_i^T k'_j)^p
/// with even p, 0/0 only when every one of them vanishes, which such a grid makes (all but)
/// impossible; a zero q row would make it certain.
inline rc::Gen<double> nonzero_grid_value() {
  return rc::gen::map(size_in(0, (1 << 17) - 1), [](std::size_t i) {
    const double x = 1 - static_cast<double>(i / 2) / 65536.0;
    return i % 2 ? -x : x;
  });
}

/// \brief A sympow case: T <= 8 (<= 5 for gradients: one head, dual numbers and finite
/// differences of the attention form), K even when rotating, ragged cu_seqlens with empty
/// sequences a third of the time (forms), g in [-1, -2^-16] (strictly negative: finite
/// differences step it), rates beta in (0, 2] (the seed's 1 + tanh range), rotary base N in
/// [2, 1000]. No initial state (attention_backward takes none).
inline rc::Gen<Case> sympow_case_for(Property p, const RuleInfo &r) {
  return rc::gen::exec([p, r] {
    const bool grads = p == Property::gradients;
    Case c;
    c.gate = r.gate;
    c.power = r.power;
    c.normalise = r.normalise;
    c.K = r.rotary ? 2 * *size_in(1, 2) : *size_in(1, 4);
    c.V = *size_in(1, 3);
    c.H = grads ? 1 : *size_in(1, 2);
    c.T = *size_in(0, grads ? 5 : 8);
    c.C = *size_in(1, c.T + 1);
    c.state_columns = c.V + (r.normalise ? 1 : 0);
    if (!grads && *size_in(0, 2) == 0) {
      c.B = 1;
      c.cu_seqlens = {0};
      while (c.cu_seqlens.back() < static_cast<std::int64_t>(c.T))
        c.cu_seqlens.push_back(static_cast<std::int64_t>(
            *size_in(static_cast<std::size_t>(c.cu_seqlens.back()), c.T)));
      if (c.cu_seqlens.size() == 1)
        c.cu_seqlens.push_back(0);
    } else {
      c.B = grads ? 1 : *size_in(1, 2);
    }
    const std::size_t rows = c.B * c.T * c.H;
    c.q = *values(rows * c.K, nonzero_grid_value());
    c.k = *values(rows * c.K, nonzero_grid_value());
    c.v = *values(rows * c.V, grid_value(-1, 1));
    if (r.gate == GateKind::scalar)
      c.g = *values(rows, grid_value(-1.0 / 65536, -1));
    c.has_beta = r.has_beta;
    if (r.has_beta)
      c.beta = *values(rows, grid_value(2.0 / 65536, 2));
    if (r.rotary)
      c.rotary_base = *grid_value(2, 1000);
    if (grads)
      c.d_o = *values(rows * c.V, grid_value(-1, 1));
    return c;
  });
}

/// \brief The generator of cases for property p on rule r.
inline rc::Gen<Case> case_for(Property p, const RuleInfo &r) {
  if (r.power > 0)
    return sympow_case_for(p, r);
  return rc::gen::exec([p, r] {
    Case c;
    c.gate = r.gate;
    const auto dims = [&](std::size_t max_b, std::size_t max_h, std::size_t max_kv) {
      c.B = *size_in(1, max_b);
      c.H = *size_in(1, max_h);
      c.K = *size_in(1, max_kv);
      c.V = *size_in(1, max_kv);
      c.state_columns = c.V + r.extra_state_columns;
    };
    switch (p) {
    case Property::forms_agree:
    case Property::extreme_gates: {
      const bool extreme = p == Property::extreme_gates;
      dims(extreme ? 1 : 2, extreme ? 1 : 2, extreme ? 3 : 4);
      // Extreme gates: long sequences and, half the time, one chunk holding all of them, so
      // a chunk's decay span passes the exponent range of double (e^-708) now and then.
      c.T = extreme ? *size_in(12, 24) : *size_in(0, 20);
      c.C = extreme && *rc::gen::arbitrary<bool>() ? c.T : *size_in(1, c.T + 2);
      draw_values(c, r, extreme);
      break;
    }
    case Property::varlen: {
      dims(1, 2, 3);
      const std::size_t N = *size_in(1, 4);
      c.cu_seqlens = {0};
      std::size_t longest = 0;
      for (std::size_t n = 0; n < N; ++n) {
        const std::size_t len = *size_in(0, 7);
        longest = std::max(longest, len);
        c.cu_seqlens.push_back(c.cu_seqlens.back() + static_cast<std::int64_t>(len));
      }
      c.T = static_cast<std::size_t>(c.cu_seqlens.back());
      c.C = *size_in(1, longest + 2);
      draw_values(c, r, false);
      break;
    }
    case Property::halves: {
      dims(2, 2, 3);
      c.T = *size_in(0, 16);
      c.split = *size_in(0, c.T);
      c.C = *size_in(1, c.T + 2);
      draw_values(c, r, false);
      break;
    }
    case Property::causality:
    case Property::causality_extreme_gates: {
      dims(2, 2, 3);
      c.T = *size_in(1, 16);
      c.split = *size_in(0, c.T - 1);
      c.C = *size_in(1, c.T + 2);
      // Extreme gates: a chunk whose decay span crosses a threshold must not let later
      // steps change how earlier ones are computed.
      const bool extreme = p == Property::causality_extreme_gates;
      draw_values(c, r, extreme);
      const std::size_t rows = c.B * c.T * c.H;
      c.q_late = features(r, c.K, rows * c.K);
      c.k_late = keys(r, c.K, rows * c.K);
      c.v_late = values_of(r, c.V, rows * c.V);
      c.g_late = *values(gate_count(c), extreme ? extreme_gate_value() : gate_value());
      if (r.has_beta)
        c.beta_late = betas(r, rows, false);
      if (r.has_ab) {
        c.a_late = low_rank_rows(c.K, rows * c.K);
        c.b_late = low_rank_rows(c.K, rows * c.K);
      }
      break;
    }
    case Property::gradients: {
      dims(1, 1, 3);
      c.T = *size_in(0, 8);
      c.C = *size_in(1, c.T + 2);
      draw_values(c, r, false, true);
      c.d_o = *values(c.B * c.T * c.H * c.V, signed_value());
      if (!r.stateless && *rc::gen::arbitrary<bool>())
        c.d_ht = *values(c.sequences() * c.H * c.K * c.state_columns, signed_value());
      break;
    }
    }
    return c;
  });
}

} // namespace ruleproof::checks::gen
