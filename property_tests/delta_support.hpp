// ruleproof property tests of the delta-rule family (delta_rule, gated_delta_rule, kda):
// drawn cases (with the variants: l2norm inside the op, beta up to 2, grouped value heads),
// the forms by rule, and the error bounds of checks/delta_bounds.hpp (computed from the
// precision, a magnitude and the condition number of I + A0; derived there).
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <rapidcheck/catch.h>
#include <rapidcheck/detail/Configuration.h>

#include "checks/generators.hpp"

#include "checks/delta_bounds.hpp"
#include "reference/core/compare.hpp"
#include "reference/kda/kda.hpp"
#include "reference/rule_id.hpp"

namespace ruleproof::delta_tests {

/// The delta rules these tests draw: the registry's ids (reference/rule_id.hpp), which name
/// them and give their gates (gate_of).
using Rule = RuleId;
inline constexpr std::array<Rule, 3> delta_rules{Rule::delta_rule, Rule::gated_delta_rule,
                                                 Rule::kda};

/// \brief One drawn case: shapes, options and the seed its values come from.
struct Case {
  Rule rule = Rule::kda;
  std::size_t B = 1, T = 0, H = 1, groups = 1, K = 1, V = 1, C = 1;
  std::vector<std::int64_t> cu_seqlens; ///< empty: one sequence a batch row
  bool has_h0 = false, l2norm = false, neg_eigval = false, extreme_gates = false;
  std::uint64_t values_seed = 0;
  std::size_t HV() const { return H * groups; }
  std::size_t sequences() const { return cu_seqlens.empty() ? B : cu_seqlens.size() - 1; }
  kda::Variant variant() const {
    kda::Variant v;
    v.use_qk_l2norm = l2norm;
    v.allow_neg_eigval = neg_eigval;
    return v;
  }
  Options options() const {
    Options o;
    o.chunk_size = C;
    o.cu_seqlens = cu_seqlens;
    return o;
  }
};

inline std::string describe(const Case &c) {
  std::ostringstream os;
  os << name_of(c.rule) << " B=" << c.B << " T=" << c.T << " H=" << c.H << " HV=" << c.HV()
     << " K=" << c.K << " V=" << c.V << " C=" << c.C << " h0=" << c.has_h0 << " l2norm=" << c.l2norm
     << " beta_up_to_2=" << c.neg_eigval << " extreme_gates=" << c.extreme_gates
     << " values_seed=" << c.values_seed;
  if (!c.cu_seqlens.empty()) {
    os << " cu_seqlens=[";
    for (std::size_t i = 0; i < c.cu_seqlens.size(); ++i)
      os << (i ? "," : "") << c.cu_seqlens[i];
    os << "]";
  }
  return os.str();
}
inline void showValue(const Case &c, std::ostream &os) { os << describe(c); }

using checks::gen::size_in; // a size in [lo, hi], whatever the RapidCheck size

/// \brief Draws a case; `max_T` bounds the length, `varlen` cuts row 0 into sequences
/// (empty ones included).
inline Case draw_case(std::size_t max_T, bool varlen) {
  Case c;
  c.rule = delta_rules[*size_in(0, 2)];
  c.T = *size_in(0, max_T);
  c.H = *size_in(1, 2);
  c.groups = *size_in(1, 2);
  c.K = *size_in(1, 5);
  c.V = *size_in(1, 4);
  c.C = *size_in(1, c.T + 2);
  if (varlen) {
    c.B = 1;
    const std::size_t cuts = *size_in(0, 3);
    std::vector<std::int64_t> offsets{0, static_cast<std::int64_t>(c.T)};
    for (std::size_t i = 0; i < cuts; ++i)
      offsets.push_back(static_cast<std::int64_t>(*size_in(0, c.T)));
    std::sort(offsets.begin(), offsets.end());
    c.cu_seqlens = offsets;
  } else {
    c.B = *size_in(1, 2);
  }
  c.has_h0 = *rc::gen::arbitrary<bool>();
  c.l2norm = *rc::gen::arbitrary<bool>();
  c.neg_eigval = *rc::gen::arbitrary<bool>();
  c.extreme_gates = c.rule != Rule::delta_rule && *size_in(0, 3) == 0;
  c.values_seed = *rc::gen::arbitrary<std::uint64_t>();
  return c;
}

/// \brief The inputs of a case in double: q, v, h0 uniform in [-1, 1]; k rows uniform then
/// scaled to ||k|| <= 1 (unless normalised inside the op); beta in (0, 1] or (0, 2); g in
/// [-1, 0], or with extreme gates a mix of -1e-8 and values down to -400 (exp(-400 C)
/// leaves the range of double: gla's ChunkDecay must take its pairwise branch).
inline Inputs<double> make_inputs(const Case &c) {
  std::mt19937_64 rng(c.values_seed);
  std::uniform_real_distribution<double> unit(-1.0, 1.0), open01(0.0, 1.0);
  const auto fill = [&](Shape s) {
    Tensor<double> x(std::move(s));
    for (std::size_t i = 0; i < x.size(); ++i)
      x[i] = unit(rng);
    return x;
  };
  const std::size_t HV = c.HV();
  Inputs<double> in;
  in.q = fill({c.B, c.T, c.H, c.K});
  in.k = fill({c.B, c.T, c.H, c.K});
  if (!c.l2norm)
    for (std::size_t row = 0; row < c.B * c.T * c.H; ++row) {
      double norm2 = 0;
      for (std::size_t i = 0; i < c.K; ++i)
        norm2 += in.k[row * c.K + i] * in.k[row * c.K + i];
      if (norm2 > 1)
        for (std::size_t i = 0; i < c.K; ++i)
          in.k[row * c.K + i] /= std::sqrt(norm2) * (1 + 1e-15);
    }
  in.v = fill({c.B, c.T, HV, c.V});
  in.beta = Tensor<double>({c.B, c.T, HV});
  const double beta_high = c.neg_eigval ? 2.0 : 1.0;
  for (std::size_t i = 0; i < in.beta.size(); ++i) // (0, 1] or (0, 2)
    in.beta[i] =
        std::min(beta_high * (1.0 - open01(rng)), c.neg_eigval ? std::nextafter(2.0, 0.0) : 1.0);
  if (c.rule != Rule::delta_rule) {
    in.g =
        c.rule == Rule::kda ? Tensor<double>({c.B, c.T, HV, c.K}) : Tensor<double>({c.B, c.T, HV});
    for (std::size_t i = 0; i < in.g.size(); ++i) {
      const double u = open01(rng);
      in.g[i] = c.extreme_gates ? (u < 0.5 ? -1e-8 : -400.0 * u) : -u;
    }
  }
  if (c.has_h0)
    in.h0 = fill({c.sequences(), HV, c.K, c.V});
  return in;
}

template <Scalar S> Output<S> run(Form f, const Case &c, const Inputs<S> &in, const Options &opts) {
  const GateKind gate = gate_of(c.rule);
  switch (f) {
  case Form::recurrent: return kda::family::recurrent(in, opts, gate, c.variant());
  case Form::parallel: return kda::family::parallel(in, opts, gate, c.variant());
  case Form::chunk: return kda::family::chunk(in, opts, gate, c.variant());
  }
  return {};
}

/// Every head of every sequence of a case, as kda's chunkwise form sees it.
template <Scalar S> std::vector<Head<S>> kda_heads(const Case &c, const Inputs<S> &in) {
  return checks::delta::kda_heads(in, c.options(), gate_of(c.rule), c.variant());
}

// The bounds: the one derivation in checks/delta_bounds.hpp (shared with the property checks
// of `ruleproof verify`), applied to a case of these tests.
using checks::delta::condition_inf;
using checks::delta::ForwardBound;
using checks::delta::Magnitudes;

template <Scalar S> Magnitudes magnitudes(const Case &c, const Inputs<S> &in) {
  return checks::delta::magnitudes(in, c.options(), gate_of(c.rule), c.variant());
}

inline double forward_ops(const Case &c) { return checks::delta::forward_ops(c.T, c.C, c.K, c.V); }

template <Scalar S> ForwardBound<S> forward_bound(const Case &c, const Magnitudes &m) {
  return checks::delta::forward_bound<S>(forward_ops(c), m);
}

/// Logs the RapidCheck seed of the run, to replay with RC_PARAMS="seed=N".
inline std::uint64_t log_seed() {
  const std::uint64_t seed = rc::detail::configuration().testParams.seed;
  WARN("RapidCheck seed " << seed << ": replay with RC_PARAMS=\"seed=" << seed << "\"");
  return seed;
}

} // namespace ruleproof::delta_tests
