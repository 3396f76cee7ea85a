// ruleproof property checks: RapidCheck generators of test cases, one per property, shared
// by the Catch tests (which shrink through them) and `ruleproof verify` (which draws from
// them with a seed of its own and shrinks the same way).
//
// Every size is drawn explicitly in a fixed range (gen::resize pins the RapidCheck size, so
// gen::inRange spans its whole range whatever the test size). Values are dyadic rationals
// m/8, exact in every scalar type; each generator shrinks towards the simplest value
// (0, 1/8, g = -1/8, length 0, chunk size 1).
#pragma once

#include <cmath>
#include <cstddef>

#include <rapidcheck.h>

#include "case.hpp"

namespace ruleproof::checks::gen {

/// A size in [lo, hi], both ends included, independent of the RapidCheck size.
inline rc::Gen<std::size_t> size_in(std::size_t lo, std::size_t hi) {
  return rc::gen::resize(100, rc::gen::inRange<std::size_t>(lo, hi + 1));
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

/// Draws q, k, v, g (extreme or ordinary) and the initial state once the shape is set.
inline void draw_values(Case &c, const RuleInfo &r, bool extreme) {
  const std::size_t rows = c.B * c.T * c.H;
  c.q = features(r, c.K, rows * c.K);
  c.k = features(r, c.K, rows * c.K);
  c.v = *values(rows * c.V, signed_value());
  c.g = *values(gate_count(c), extreme ? extreme_gate_value() : gate_value());
  if (r.normalised_keys) // |k_i| <= 1/K, so ||k||_2 <= 1
    for (double &x : c.k)
      x /= static_cast<double>(c.K);
  if (r.has_beta) // beta_low + (beta_high - beta_low) m/8, m in [1, 8]
    c.beta = *rc::gen::container<std::vector<double>>(
        rows, rc::gen::map(size_in(1, 8), [r](std::size_t m) {
          return r.beta_low + (r.beta_high - r.beta_low) * static_cast<double>(m) / 8;
        }));
  c.has_h0 = *rc::gen::arbitrary<bool>();
  if (c.has_h0) {
    const std::size_t n = c.sequences() * c.H * c.K * c.state_columns;
    c.h0 = *values(n, signed_value());
    if (c.state_columns > c.V) // z, the running sum of phi(k), starts positive
      for (std::size_t i = c.state_columns - 1; i < n; i += c.state_columns)
        c.h0[i] = std::abs(c.h0[i]) + 0.125;
  }
}

/// \brief The generator of cases for property p on rule r.
inline rc::Gen<Case> case_for(Property p, const RuleInfo &r) {
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
      c.k_late = features(r, c.K, rows * c.K);
      if (r.normalised_keys)
        for (double &x : c.k_late)
          x /= static_cast<double>(c.K);
      c.v_late = *values(rows * c.V, signed_value());
      c.g_late = *values(gate_count(c), extreme ? extreme_gate_value() : gate_value());
      break;
    }
    case Property::gradients: {
      dims(1, 1, 3);
      c.T = *size_in(0, 8);
      c.C = *size_in(1, c.T + 2);
      draw_values(c, r, false);
      c.d_o = *values(c.B * c.T * c.H * c.V, signed_value());
      if (*rc::gen::arbitrary<bool>())
        c.d_ht = *values(c.sequences() * c.H * c.K * c.state_columns, signed_value());
      break;
    }
    }
    return c;
  });
}

} // namespace ruleproof::checks::gen
