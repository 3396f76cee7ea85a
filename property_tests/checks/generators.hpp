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

/// \brief Which log-gates a case draws: ordinary ones (gate_value), or a mix of extremes:
/// barely decaying, e^-60 and e^-3000 a step. shared::ChunkDecay factors a row of a chunk only
/// while its cumulative log-decay stays under half the exponent range of the scalar (354 in
/// double, 5678 in long double and float128) and takes the rest pairwise: 6 steps of -60 pass
/// double's, 2 of -3000 long double's and float128's. `extreme_interior` (gradient cases)
/// barely decays by 2^-16 rather than 1e-8, so that finite differences (steps up to
/// 2 eps^(1/3) of double) keep g < 0.
enum class Gates { ordinary, extreme, extreme_interior };

inline rc::Gen<double> extreme_gate_value() { return rc::gen::element(-1e-8, -60.0, -3000.0); }

inline rc::Gen<double> gate_value(Gates gates) {
  switch (gates) {
  case Gates::ordinary: return gate_value();
  case Gates::extreme: return extreme_gate_value();
  case Gates::extreme_interior: return rc::gen::element(-1.0 / 65536, -60.0, -3000.0);
  }
  return gate_value();
}

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
  case GateKind::scalar: return c.B * c.T * c.value_heads();
  case GateKind::key: return c.B * c.T * c.value_heads() * c.K;
  case GateKind::value: return c.B * c.T * c.value_heads() * c.V;
  }
  return 0;
}

/// beta in the rule's range (beta_low, beta_high]: beta_low + (beta_high - beta_low) m/8 for
/// m in [1, 8], shrinking towards m = 1. `interior`: m <= 7, so that finite differences
/// (steps of 2 eps^(1/3)) stay inside the range. An open range (beta_low, beta_high) takes
/// m = 8 as beta_high - (beta_high - beta_low)/1024 instead: near the open end (the delta
/// rules' beta up to 2, where I - beta k k^T nears the eigenvalue -1).
inline std::vector<double> betas(const RuleInfo &r, std::size_t n, bool interior) {
  const std::size_t top = interior ? 7 : 8;
  return *values(n, rc::gen::map(size_in(1, top), [r](std::size_t m) {
                   const double width = r.beta_high - r.beta_low;
                   return m == 8 && r.beta_high_open
                              ? r.beta_high - width / 1024
                              : r.beta_low + width * static_cast<double>(m) / 8;
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

/// \brief Draws the rule's variant into c once B, H, K, V are set: the delta rules' (q, k
/// normalised inside the op, beta in (0, 2), two value heads a query/key head), softmax
/// attention's encodings (ALiBi slope m/8 for m in [0, 4], rotary q, k and rotary v, o, which
/// make K, V even). Returns the rule as its values must be drawn for that variant (keys
/// left as they are when the op normalises them, beta's range up to 2). Every draw shrinks
/// towards the registry's rule itself.
inline RuleInfo draw_variant(Case &c, const RuleInfo &r) {
  RuleInfo v = r;
  if (r.delta_variants) {
    c.value_groups = *size_in(1, 2);
    c.qk_l2norm = *rc::gen::arbitrary<bool>();
    c.neg_eigval = *rc::gen::arbitrary<bool>();
    if (c.qk_l2norm)
      v.normalised_keys = false;
    if (c.neg_eigval)
      v.beta_high = 2, v.beta_high_open = true;
  }
  if (r.softmax_encodings) {
    c.alibi_slope = static_cast<double>(*size_in(0, 4)) / 8;
    c.rope_qk = *rc::gen::arbitrary<bool>();
    c.rope_vo = *rc::gen::arbitrary<bool>();
    c.K += c.rope_qk ? c.K % 2 : 0;
    c.V += c.rope_vo ? c.V % 2 : 0;
    c.state_columns = c.V + r.extra_state_columns;
  }
  return v;
}

/// Draws q, k, v, g, beta, the initial state and the low-rank pair once the shape is set.
/// A rule whose gate is optional has none in half the ordinary cases.
inline void draw_values(Case &c, const RuleInfo &r, Gates gates, bool interior_beta = false) {
  const std::size_t rows = c.B * c.T * c.H, value_rows = c.B * c.T * c.value_heads();
  if (r.optional_gate && gates == Gates::ordinary && *rc::gen::arbitrary<bool>())
    c.gate = GateKind::none;
  c.q = features(r, c.K, rows * c.K);
  c.k = keys(r, c.K, rows * c.K);
  c.v = values_of(r, c.V, value_rows * c.V);
  c.g = *values(gate_count(c), gate_value(gates));
  c.has_beta = r.has_beta;
  if (r.has_beta)
    c.beta = betas(r, value_rows, interior_beta);
  c.has_h0 = !r.stateless && *rc::gen::arbitrary<bool>();
  if (c.has_h0) {
    const std::size_t n = c.sequences() * c.value_heads() * c.K * c.state_columns;
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
/// with even p, 0 only when every one of them vanishes, which such a grid makes (all but)
/// impossible; a zero q row would make it certain. Its computed value through phi^p may still
/// cancel to 0 when the terms nearly vanish: the checks count such rows (bound +infinity,
/// reference/sympow/bounds.hpp) as undecided.
inline rc::Gen<double> nonzero_grid_value() {
  return rc::gen::map(size_in(0, (1 << 17) - 1), [](std::size_t i) {
    const double x = 1 - static_cast<double>(i / 2) / 65536.0;
    return i % 2 ? -x : x;
  });
}

/// \brief A sympow case for property p: K even when rotating, g in [-1, -2^-16] (strictly
/// negative: finite differences step it) or, for the extreme-gate properties, the mix of
/// extremes of gate_value(Gates), rates beta in (0, 2] (the seed's 1 + tanh range), rotary
/// base N in [2, 1000]. Forms agree and extreme gates: T <= 8, ragged cu_seqlens with empty
/// sequences a third of the time (extreme gates: half the time one chunk holding all of T).
/// Varlen: up to 4 sequences of up to 4 steps. Halves: T <= 8, any split P in [0, T].
/// Causality: T in [1, 8], P < T, every input at t >= P drawn again (q, k, v eight times as
/// large). Gradients: T <= 5, one head, one sequence (dual numbers and finite differences of
/// the attention form). No initial state (attention_backward takes none; halves carries one
/// from its first part into its second).
inline rc::Gen<Case> sympow_case_for(Property p, const RuleInfo &r) {
  return rc::gen::exec([p, r] {
    const bool grads = p == Property::gradients || p == Property::gradients_extreme_gates;
    const bool extreme = p == Property::extreme_gates || p == Property::causality_extreme_gates ||
                         p == Property::gradients_extreme_gates;
    const bool causal = p == Property::causality || p == Property::causality_extreme_gates;
    const Gates gates = !extreme ? Gates::ordinary
                        : grads  ? Gates::extreme_interior
                                 : Gates::extreme;
    Case c;
    c.gate = r.gate;
    c.power = r.power;
    c.normalise = r.normalise;
    c.K = r.rotary ? 2 * *size_in(1, 2) : *size_in(1, 4);
    c.V = *size_in(1, 3);
    c.H = grads ? 1 : *size_in(1, 2);
    c.state_columns = c.V + (r.normalise ? 1 : 0);
    const auto cut = [&] { // one row of T steps cut at drawn offsets, empty sequences included
      c.B = 1;
      c.cu_seqlens = {0};
      while (c.cu_seqlens.back() < static_cast<std::int64_t>(c.T))
        c.cu_seqlens.push_back(static_cast<std::int64_t>(
            *size_in(static_cast<std::size_t>(c.cu_seqlens.back()), c.T)));
      if (c.cu_seqlens.size() == 1)
        c.cu_seqlens.push_back(0);
    };
    switch (p) {
    case Property::varlen: {
      const std::size_t N = *size_in(1, 4);
      c.cu_seqlens = {0};
      std::size_t longest = 0;
      for (std::size_t n = 0; n < N; ++n) {
        const std::size_t len = *size_in(0, 4);
        longest = std::max(longest, len);
        c.cu_seqlens.push_back(c.cu_seqlens.back() + static_cast<std::int64_t>(len));
      }
      c.T = static_cast<std::size_t>(c.cu_seqlens.back());
      c.C = *size_in(1, longest + 1);
      break;
    }
    case Property::halves:
      c.B = *size_in(1, 2);
      c.T = *size_in(0, 8);
      c.split = *size_in(0, c.T);
      c.C = *size_in(1, c.T + 1);
      break;
    case Property::causality:
    case Property::causality_extreme_gates:
      c.B = *size_in(1, 2);
      c.T = *size_in(1, 8);
      c.split = *size_in(0, c.T - 1);
      c.C = *size_in(1, c.T + 1);
      break;
    case Property::gradients:
    case Property::gradients_extreme_gates:
      c.T = *size_in(0, 5);
      c.C = *size_in(1, c.T + 1);
      break;
    case Property::forms_agree:
    case Property::extreme_gates:
      c.T = *size_in(0, 8);
      c.C = extreme && *rc::gen::arbitrary<bool>() ? std::max<std::size_t>(c.T, 1)
                                                   : *size_in(1, c.T + 1);
      if (*size_in(0, 2) == 0)
        cut();
      else
        c.B = *size_in(1, 2);
      break;
    }
    const std::size_t rows = c.B * c.T * c.H;
    const auto draw = [&](std::vector<double> &q, std::vector<double> &k, std::vector<double> &v,
                          std::vector<double> &g, std::vector<double> &beta) {
      q = *values(rows * c.K, nonzero_grid_value());
      k = *values(rows * c.K, nonzero_grid_value());
      v = *values(rows * c.V, grid_value(-1, 1));
      if (r.gate == GateKind::scalar)
        g = *values(rows, extreme ? gate_value(gates) : grid_value(-1.0 / 65536, -1));
      if (r.has_beta)
        beta = *values(rows, grid_value(2.0 / 65536, 2));
    };
    draw(c.q, c.k, c.v, c.g, c.beta);
    c.has_beta = r.has_beta;
    if (r.rotary)
      c.rotary_base = *grid_value(2, 1000);
    if (causal) { // a later step leaking into an earlier output would take it over
      draw(c.q_late, c.k_late, c.v_late, c.g_late, c.beta_late);
      for (auto *x : {&c.q_late, &c.k_late, &c.v_late})
        for (double &e : *x)
          e *= 8;
    }
    if (grads)
      c.d_o = *values(rows * c.V, grid_value(-1, 1));
    return c;
  });
}

/// \brief Rows of q and k ([rows, K]) with ||x||_2 >= 1/4 (the first entry at least 1/4 in
/// magnitude): x / sqrt(||x||^2 + eps) bends on the scale ||x||, and the finite-difference step
/// eps^(1/3) must resolve it (gradient cases with q, k normalised inside the op).
inline void away_from_zero(std::vector<double> &x, std::size_t K) {
  for (std::size_t i = 0; i < x.size(); i += K)
    if (std::abs(x[i]) < 0.25)
      x[i] = x[i] < 0 ? -0.25 : 0.25;
}

/// \brief The generator of cases for property p on rule r.
///
/// Sizes: B, H <= 2, K <= 5, V <= 4 (K <= 4 with extreme gates; K, V <= 3 for gradients,
/// whose dual numbers and finite differences run the forward once or four times per input),
/// then the rule's variant (draw_variant). Forms agree: T <= 20, a third of the cases one row
/// cut into sequences (empty ones included), any chunk size C <= T + 2. Extreme gates: T in
/// [1, 24], half the time one chunk holding all of it. Varlen: up to 4 sequences of up to 7
/// steps. Halves: T <= 16, any split. Causality: T in [1, 16], P < T, every input at t >= P
/// drawn again (q, k, v eight times as large). Gradients: T <= 8 (<= 7 with two rows or two
/// heads), a third of the cases cut into sequences, beta inside its range, a final-state
/// cotangent half the time.
inline rc::Gen<Case> case_for(Property p, const RuleInfo &r) {
  if (r.power > 0)
    return sympow_case_for(p, r);
  return rc::gen::exec([p, r] {
    Case c;
    c.gate = r.gate;
    RuleInfo v = r; // as the values must be drawn for the case's variant
    const auto dims = [&](std::size_t max_b, std::size_t max_h, std::size_t max_k,
                          std::size_t max_v) {
      c.B = *size_in(1, max_b);
      c.H = *size_in(1, max_h);
      c.K = *size_in(1, max_k);
      c.V = *size_in(1, max_v);
      c.state_columns = c.V + r.extra_state_columns;
      v = draw_variant(c, r);
    };
    // A third of the cases: one row of T steps cut into sequences, empty ones included.
    const auto maybe_varlen = [&] {
      if (*size_in(0, 2) == 0) {
        c.B = 1;
        c.cu_seqlens = cut_into_sequences(c.T);
      }
    };
    switch (p) {
    case Property::forms_agree:
    case Property::extreme_gates: {
      const bool extreme = p == Property::extreme_gates;
      dims(2, 2, extreme ? 4 : 5, 4);
      // Extreme gates: long sequences and, half the time, one chunk holding all of them, so
      // a chunk's decay span passes the exponent range of the scalar now and then.
      c.T = extreme ? *size_in(1, 24) : *size_in(0, 20);
      maybe_varlen();
      c.C = extreme && *rc::gen::arbitrary<bool>() ? std::max<std::size_t>(c.T, 1)
                                                   : *size_in(1, c.T + 2);
      draw_values(c, v, extreme ? Gates::extreme : Gates::ordinary);
      break;
    }
    case Property::varlen: {
      dims(1, 2, 5, 4);
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
      draw_values(c, v, Gates::ordinary);
      break;
    }
    case Property::halves: {
      dims(2, 2, 5, 4);
      c.T = *size_in(0, 16);
      c.split = *size_in(0, c.T);
      c.C = *size_in(1, c.T + 2);
      draw_values(c, v, Gates::ordinary);
      break;
    }
    case Property::causality:
    case Property::causality_extreme_gates: {
      dims(2, 2, 5, 4);
      c.T = *size_in(1, 16);
      c.split = *size_in(0, c.T - 1);
      c.C = *size_in(1, c.T + 2);
      // Extreme gates: a chunk whose decay span crosses a threshold must not let later
      // steps change how earlier ones are computed.
      const Gates gates = p == Property::causality_extreme_gates ? Gates::extreme : Gates::ordinary;
      draw_values(c, v, gates);
      // The later q, k, v eight times as large as the earlier ones where the rule's domain
      // allows (not normalised keys or values): a later step leaking into an earlier output
      // would take over, as a later score would take over a softmax row's running maximum.
      const auto magnified = [](std::vector<double> x, bool allowed) {
        for (double &e : x)
          e *= allowed ? 8 : 1;
        return x;
      };
      const std::size_t rows = c.B * c.T * c.H, value_rows = c.B * c.T * c.value_heads();
      c.q_late = magnified(features(v, c.K, rows * c.K), true);
      c.k_late = magnified(keys(v, c.K, rows * c.K), !v.normalised_keys);
      c.v_late = magnified(values_of(v, c.V, value_rows * c.V), !v.normalised_values);
      c.g_late = *values(gate_count(c), gate_value(gates));
      if (v.has_beta)
        c.beta_late = betas(v, value_rows, false);
      if (v.has_ab) {
        c.a_late = low_rank_rows(c.K, rows * c.K);
        c.b_late = low_rank_rows(c.K, rows * c.K);
      }
      break;
    }
    case Property::gradients:
    case Property::gradients_extreme_gates: {
      dims(2, 2, 3, 3);
      c.T = *size_in(0, c.B * c.H > 1 ? 7 : 8);
      maybe_varlen();
      c.C = *size_in(1, c.T + 2);
      draw_values(
          c, v, p == Property::gradients_extreme_gates ? Gates::extreme_interior : Gates::ordinary,
          true);
      if (c.qk_l2norm) {
        away_from_zero(c.q, c.K);
        away_from_zero(c.k, c.K);
      }
      c.d_o = *values(c.B * c.T * c.value_heads() * c.V, signed_value());
      if (!r.stateless && *rc::gen::arbitrary<bool>())
        c.d_ht = *values(c.sequences() * c.value_heads() * c.K * c.state_columns, signed_value());
      break;
    }
    }
    return c;
  });
}

} // namespace ruleproof::checks::gen
