// ruleproof property tests of the low-rank rules (dplr in its three parameterisations, iplr,
// gated_oja), templated on the scalar: drawn cases, the forms by rule, and the comparisons
// under the error bounds of checks/lowrank_bounds.hpp (the one derivation, shared with the
// property checks of `ruleproof verify`: a majorant recurrence, Higham's gamma_n and the
// condition number of the chunk's triangular system). Each *_tests_<scalar>.cpp states the
// properties in one scalar type.
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <rapidcheck/catch.h>
#include <rapidcheck/detail/Configuration.h>

#include "checks/generators.hpp"
#include "checks/lowrank_bounds.hpp"
#include "seeded_values.hpp"

#include "reference/core/compare.hpp"
#include "reference/core/gradients.hpp"
#include "reference/dplr/dplr.hpp"
#include "reference/gated_oja/gated_oja.hpp"
#include "reference/iplr/iplr.hpp"

namespace ruleproof::lowrank_tests {

using checks::lowrank::param_of;
using checks::lowrank::Rule; // the registry's RuleId: name_of(rule) is the registry's name
inline const std::vector<Rule> dplr_rules{Rule::dplr, Rule::dplr_fla, Rule::dplr_no_gate,
                                          Rule::iplr};

/// \brief One drawn case: shapes, options and the seed its values come from.
struct Case : test_support::DrawnCall {
  Rule rule = Rule::dplr;
};

inline std::string describe(const Case &c) {
  std::ostringstream os;
  os << name_of(c.rule) << " B=" << c.B << " T=" << c.T << " H=" << c.H << " K=" << c.K
     << " V=" << c.V << " C=" << c.C << " h0=" << c.has_h0 << " extreme_gates=" << c.extreme_gates
     << " values_seed=" << c.values_seed << checks::describe_offsets(c.cu_seqlens);
  return os.str();
}
inline void showValue(const Case &c, std::ostream &os) { os << describe(c); }

using checks::gen::size_in; // a size in [lo, hi], whatever the RapidCheck size

/// \brief Draws a case of rule r; `max_T`, `max_d` bound the length and the feature sizes,
/// `varlen` cuts row 0 into sequences (empty ones included).
inline Case draw_case(Rule r, std::size_t max_T, std::size_t max_d, bool varlen, bool extreme) {
  Case c;
  c.rule = r;
  c.T = *size_in(0, max_T);
  c.H = *size_in(1, 2);
  c.K = *size_in(1, max_d);
  c.V = *size_in(1, max_d);
  c.C = *size_in(1, c.T + 2);
  if (varlen) {
    c.B = 1;
    c.cu_seqlens = checks::gen::cut_into_sequences(c.T);
  } else {
    c.B = *size_in(1, 2);
  }
  c.has_h0 = *rc::gen::arbitrary<bool>();
  c.extreme_gates = extreme && r != Rule::iplr;
  c.values_seed = *rc::gen::arbitrary<std::uint64_t>();
  return c;
}

using test_support::limit_rows;

/// \brief The inputs of a case: q, k, v, h0 uniform in [-1, 1]; a, b rows of norm <= 1
/// (dplr, iplr), v rows of norm <= 1 and beta in (0, 1] (gated_oja, so every I - beta v v^T
/// is a contraction); g in [-1, 0], or with extreme gates a mix of -1e-8 and values down to
/// -3000 (spans beyond half the exponent range of float128: ChunkDecay's pairwise branch).
/// `interior` (gradient cases): every g and beta at least two finite-difference steps (2
/// eps^(1/3) in S, as finite_difference_grads takes them) inside its range, so that x +- h
/// stays valid input.
template <Scalar S> Inputs<S> make_inputs(const Case &c, bool interior = false) {
  using std::cbrt;
  const double margin = interior ? 2 * to_double(S(cbrt(scalar_traits<S>::epsilon()))) : 0;
  test_support::SeededValues values(c.values_seed);
  Inputs<double> in;
  in.q = values.uniform({c.B, c.T, c.H, c.K});
  in.k = values.uniform({c.B, c.T, c.H, c.K});
  in.v = values.uniform({c.B, c.T, c.H, c.V});
  if (c.rule == Rule::gated_oja) {
    limit_rows(in.v, c.V, 1.0);
    in.beta = Tensor<double>({c.B, c.T, c.H});
    for (std::size_t i = 0; i < in.beta.size(); ++i)
      in.beta[i] = margin + (1.0 - 2 * margin) * (1.0 - values.open01()); // (0, 1]
  } else {
    in.a = values.uniform({c.B, c.T, c.H, c.K});
    in.b = values.uniform({c.B, c.T, c.H, c.K});
    limit_rows(in.a, c.K, 1.0);
    limit_rows(in.b, c.K, 1.0);
  }
  if (c.rule != Rule::iplr) {
    in.g = Tensor<double>({c.B, c.T, c.H, c.rule == Rule::gated_oja ? c.V : c.K});
    for (std::size_t i = 0; i < in.g.size(); ++i) {
      const double u = values.open01();
      in.g[i] = c.extreme_gates ? (u < 0.5 ? -1e-8 - margin : -3000.0 * u) : -u - margin;
    }
  }
  if (c.has_h0)
    in.h0 = values.uniform({c.sequences(), c.H, c.K, c.V});
  return convert_inputs<S>(in, [](double x) { return from_double<S>(x); });
}

template <Scalar S> Output<S> run(Rule r, Form f, const Inputs<S> &in, const Options &opts) {
  if (r == Rule::iplr)
    return f == Form::recurrent  ? iplr::recurrent(in, opts)
           : f == Form::parallel ? iplr::parallel(in, opts)
                                 : iplr::chunk(in, opts);
  if (r == Rule::gated_oja)
    return f == Form::recurrent  ? gated_oja::recurrent(in, opts)
           : f == Form::parallel ? gated_oja::parallel(in, opts)
                                 : gated_oja::chunk(in, opts);
  const dplr::Variant var{param_of(r)};
  return f == Form::recurrent  ? dplr::recurrent(in, opts, var)
         : f == Form::parallel ? dplr::parallel(in, opts, var)
                               : dplr::chunk(in, opts, var);
}

using checks::lowrank::max_abs;
template <class S> using Magnitudes = checks::lowrank::Magnitudes<S>;

/// The magnitudes of a case (checks/lowrank_bounds.hpp), chunk size c.C.
template <Scalar S> Magnitudes<S> magnitudes(const Case &c, const Inputs<S> &in) {
  return checks::lowrank::magnitudes(c.rule, in, c.options());
}

/// factor * gamma_n * kappa * M + n * (smallest normal).
template <Scalar S> S bound_of(double n, double kappa, const S &M, double factor) {
  return checks::lowrank::bound_of(n, kappa, M, factor);
}

/// Compares a with the reference b under a uniform bound; appends a line to `why`.
template <Scalar S>
bool agree(const std::string &what, const Tensor<S> &a, const Tensor<S> &b, const S &bound,
           std::string &why) {
  const Discrepancy d = compare(a, b, [&](std::size_t) { return bound; });
  std::ostringstream os;
  os.precision(6);
  os << what << ": error/bound " << d.worst_over_bound << " (max abs " << d.max_abs_error
     << ", bound " << to_double(bound) << ", worst [" << d.worst_index << "] " << d.value_a
     << " vs " << d.value_b << ", finite " << d.finite << ")\n";
  why += os.str();
  return d.holds();
}

/// Outputs and final states of two forms, both within 2 gamma_n kappa M of the truth.
template <Scalar S>
bool outputs_agree(const std::string &what, const Output<S> &a, const Output<S> &b,
                   const Magnitudes<S> &m, std::string &why) {
  const checks::lowrank::ForwardBound<S> bound = checks::lowrank::forward_bound(m);
  const bool o = agree(what + " o", a.o, b.o, bound.o, why);
  const bool s = agree(what + " final_state", a.final_state, b.final_state, bound.state, why);
  return o && s;
}

/// |x|'s largest element (0 for an empty matrix).
template <Scalar S> S max_abs(const Mat<S> &x) {
  return x.size() ? S(x.cwiseAbs().maxCoeff()) : S(0);
}

/// A matrix as a [rows, cols] tensor, to compare under a bound.
template <Scalar S> Tensor<S> tensor_of(const Mat<S> &m) {
  Tensor<S> t({static_cast<std::size_t>(m.rows()), static_cast<std::size_t>(m.cols())});
  for (Eigen::Index i = 0; i < m.rows(); ++i)
    for (Eigen::Index j = 0; j < m.cols(); ++j)
      t(i, j) = m(i, j);
  return t;
}

/// Logs the RapidCheck seed of the run, to replay with RC_PARAMS="seed=N".
inline std::uint64_t log_seed() {
  const std::uint64_t seed = rc::detail::configuration().testParams.seed;
  WARN("RapidCheck seed " << seed << ": replay with RC_PARAMS=\"seed=" << seed << "\"");
  return seed;
}

/// \brief rc::prop with `cases` successes (scaled by RC_PARAMS max_success / 100), for the
/// properties whose every case costs many float128 forward passes.
template <class Testable> void prop_cases(const std::string &description, int cases, Testable t) {
  SECTION(description) {
    rc::detail::TestParams params = rc::detail::configuration().testParams;
    params.maxSuccess = std::max(1, cases * params.maxSuccess / 100);
    const auto result = rc::detail::checkTestable(t, rc::detail::TestMetadata{}, params);
    if (result.template is<rc::detail::SuccessResult>()) {
      SUCCEED();
    } else {
      std::ostringstream ss;
      rc::detail::printResultMessage(result, ss);
      INFO(ss.str() << "\n");
      FAIL();
    }
  }
}

} // namespace ruleproof::lowrank_tests
