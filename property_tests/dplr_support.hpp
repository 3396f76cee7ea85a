// ruleproof property tests of the low-rank rules (dplr in its three parameterisations, iplr,
// gated_oja): drawn cases, the forms by rule, the majorant the bounds are made of, and the
// error bounds, all computed from the precision (Higham's gamma_n), a computed magnitude and
// the condition number of the chunk's triangular system.
//
// Error model. Every form evaluates a polynomial in the inputs and in exp(g) (the triangular
// solves are forward substitutions on unit lower triangular matrices: no division), so a
// chain of n rounded operations has error at most gamma_n times the same expression
// evaluated on absolute values (Higham, Accuracy and Stability, 3.1). For the recurrent form
// that expression is the MAJORANT: the same recurrence with every term made nonnegative,
//   dplr/iplr   S_t = (A_t + |a_t| |d_t|^T) S_{t-1} + |k_t| |v_t|^T,   o_t = S_t^T |q~_t|,
//   gated_oja   S_t = S_{t-1} A_t (I + beta_t |v_t| |v_t|^T) + beta_t |k_t| |v_t|^T,
// run on the rule's own recurrent form with signs flipped (a -> -|a| where the rule
// subtracts a d^T, beta -> -beta and k -> -|k| for Oja). The chunkwise and parallel forms
// replace sums over time by a triangular solve; its rounding is amplified by at most
// kappa = max over chunks of cond_inf(I + A0) = ||I + A0||_inf ||(I + A0)^-1||_inf (computed
// from the stages for the drawn C and for C = L). Two forms each within gamma_n kappa M of
// the truth differ by at most 2 gamma_n kappa M.
//   n counts the longest chain: (L + C)(K + V + 5) + 10, plus (2L + 2) Gmax for the
// exponentials (a cumulative log-decay up to Gmax = max sum |g| is summed with absolute
// error <= gamma_L Gmax, which exp turns into the same relative error). Underflow adds at
// most n times the smallest normal number per element.
//
// Gradients. Each gradient of <dO, O> + <dS, S_T> is again such a sum; its magnitude M'_x is
// the gradient of the majorant loss <|dO|, O_maj> + <|dS|, S_maj> with respect to x
// (computed with dual numbers; every term is positive there). The analytic backward's gate
// gradient is a suffix sum of differences x . dx over the decayed inputs x, so its magnitude
// is M'_g,t = 2 sum_{s >= t} sum_x |x_s| M'_x,s + rowsum |S_T| |dS| (factor 2: every input
// sits in at most two places of the identity). Analytic against dual: 2 gamma_n' kappa^2 M'
// with n' = 2n + L + 10 (a forward and a backward sweep, the inverse differentiated once
// more). Finite differences against dual: the Richardson estimate of finite_difference_grads
// plus the rounding of the two loss evaluations 2 gamma_n Lmag / h plus gamma_n' M'.
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

#include "reference/core/compare.hpp"
#include "reference/core/float128.hpp"
#include "reference/core/gradients.hpp"
#include "reference/dplr/dplr.hpp"
#include "reference/gated_oja/gated_oja.hpp"
#include "reference/iplr/iplr.hpp"

namespace ruleproof::lowrank_tests {

using F128 = float128;

enum class Rule { dplr_seed, dplr_fla, dplr_no_gate, iplr, gated_oja };
inline const std::vector<Rule> dplr_rules{Rule::dplr_seed, Rule::dplr_fla, Rule::dplr_no_gate,
                                          Rule::iplr};

inline std::string name_of(Rule r) {
  switch (r) {
  case Rule::dplr_seed: return "dplr(seed)";
  case Rule::dplr_fla: return "dplr(fla)";
  case Rule::dplr_no_gate: return "dplr(no_gate)";
  case Rule::iplr: return "iplr";
  case Rule::gated_oja: return "gated_oja";
  }
  return "?";
}

inline dplr::Parameterisation param_of(Rule r) {
  return r == Rule::dplr_seed  ? dplr::Parameterisation::seed
         : r == Rule::dplr_fla ? dplr::Parameterisation::fla
                               : dplr::Parameterisation::no_gate;
}

inline bool is_dplr(Rule r) { return r != Rule::iplr && r != Rule::gated_oja; }

/// \brief One drawn case: shapes, options and the seed its values come from.
struct Case {
  Rule rule = Rule::dplr_seed;
  std::size_t B = 1, T = 0, H = 1, K = 1, V = 1, C = 1;
  std::vector<std::int64_t> cu_seqlens; ///< empty: one sequence a batch row
  bool has_h0 = false, extreme_gates = false;
  std::uint64_t values_seed = 0;
  std::size_t sequences() const { return cu_seqlens.empty() ? B : cu_seqlens.size() - 1; }
  Options options() const {
    Options o;
    o.chunk_size = C;
    o.cu_seqlens = cu_seqlens;
    return o;
  }
};

inline std::string describe(const Case &c) {
  std::ostringstream os;
  os << name_of(c.rule) << " B=" << c.B << " T=" << c.T << " H=" << c.H << " K=" << c.K
     << " V=" << c.V << " C=" << c.C << " h0=" << c.has_h0 << " extreme_gates=" << c.extreme_gates
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
  c.extreme_gates = extreme && r != Rule::iplr;
  c.values_seed = *rc::gen::arbitrary<std::uint64_t>();
  return c;
}

/// Scales every row of the last axis to Euclidean norm at most `limit`.
inline void limit_rows(Tensor<double> &x, std::size_t D, double limit) {
  for (std::size_t row = 0; row * D < x.size(); ++row) {
    double norm2 = 0;
    for (std::size_t i = 0; i < D; ++i)
      norm2 += x[row * D + i] * x[row * D + i];
    if (norm2 > limit * limit)
      for (std::size_t i = 0; i < D; ++i)
        x[row * D + i] *= limit / std::sqrt(norm2) * (1 - 1e-15);
  }
}

/// \brief The inputs of a case: q, k, v, h0 uniform in [-1, 1]; a, b rows of norm <= 1
/// (dplr, iplr), v rows of norm <= 1 and beta in (0, 1] (gated_oja, so every I - beta v v^T
/// is a contraction); g in [-1, 0], or with extreme gates a mix of -1e-8 and values down to
/// -3000 (spans beyond half the exponent range of float128: ChunkDecay's pairwise branch).
inline Inputs<F128> make_inputs(const Case &c) {
  std::mt19937_64 rng(c.values_seed);
  std::uniform_real_distribution<double> unit(-1.0, 1.0), open01(0.0, 1.0);
  const auto fill = [&](Shape s) {
    Tensor<double> x(std::move(s));
    for (std::size_t i = 0; i < x.size(); ++i)
      x[i] = unit(rng);
    return x;
  };
  Inputs<double> in;
  in.q = fill({c.B, c.T, c.H, c.K});
  in.k = fill({c.B, c.T, c.H, c.K});
  in.v = fill({c.B, c.T, c.H, c.V});
  if (c.rule == Rule::gated_oja) {
    limit_rows(in.v, c.V, 1.0);
    in.beta = Tensor<double>({c.B, c.T, c.H});
    for (std::size_t i = 0; i < in.beta.size(); ++i)
      in.beta[i] = 1.0 - open01(rng); // (0, 1]
  } else {
    in.a = fill({c.B, c.T, c.H, c.K});
    in.b = fill({c.B, c.T, c.H, c.K});
    limit_rows(in.a, c.K, 1.0);
    limit_rows(in.b, c.K, 1.0);
  }
  if (c.rule != Rule::iplr) {
    in.g = Tensor<double>({c.B, c.T, c.H, c.rule == Rule::gated_oja ? c.V : c.K});
    for (std::size_t i = 0; i < in.g.size(); ++i) {
      const double u = open01(rng);
      in.g[i] = c.extreme_gates ? (u < 0.5 ? -1e-8 : -3000.0 * u) : -u;
    }
  }
  if (c.has_h0)
    in.h0 = fill({c.sequences(), c.H, c.K, c.V});
  return convert_inputs<F128>(in, [](double x) { return F128(x); });
}

/// Upstream gradients for a case's outputs, uniform in [-1, 1].
inline Cotangents<F128> make_cotangents(const Case &c, const Output<F128> &out) {
  std::mt19937_64 rng(c.values_seed ^ 0x9e3779b97f4a7c15ull);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  Cotangents<F128> ct{Tensor<F128>(out.o.shape()), Tensor<F128>(out.final_state.shape())};
  for (std::size_t i = 0; i < ct.d_o.size(); ++i)
    ct.d_o[i] = unit(rng);
  for (std::size_t i = 0; i < ct.d_ht.size(); ++i)
    ct.d_ht[i] = unit(rng);
  return ct;
}

enum class Form { recurrent, parallel, chunk };
inline std::string name_of(Form f) {
  return f == Form::recurrent ? "recurrent" : f == Form::parallel ? "parallel" : "chunk";
}
inline const std::vector<Form> all_forms{Form::recurrent, Form::parallel, Form::chunk};

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

template <Scalar S>
Grads<S> run_backward(Rule r, const Inputs<S> &in, const Cotangents<S> &ct, const Options &opts) {
  if (r == Rule::iplr)
    return iplr::chunk_backward(in, ct, opts);
  if (r == Rule::gated_oja)
    return gated_oja::chunk_backward(in, ct, opts);
  return dplr::chunk_backward(in, ct, opts, dplr::Variant{param_of(r)});
}

template <Scalar S> void make_abs(Tensor<S> &t, bool negative = false) {
  using std::abs;
  for (std::size_t i = 0; i < t.size(); ++i)
    t[i] = negative ? S(-abs(t[i])) : S(abs(t[i]));
}

/// \brief The majorant's inputs (see the top of this file).
template <Scalar S> Inputs<S> majorant_inputs(Rule r, Inputs<S> in) {
  make_abs(in.q);
  make_abs(in.v);
  make_abs(in.h0);
  if (r == Rule::gated_oja) {
    make_abs(in.k, true);
    make_abs(in.beta, true);
    return in;
  }
  make_abs(in.k);
  // seed and no_gate subtract a b^T: a -> -|a|; fla and iplr add b a^T.
  make_abs(in.a, r == Rule::dplr_seed || r == Rule::dplr_no_gate);
  make_abs(in.b);
  return in;
}

/// \brief The majorant forward: the rule's recurrent form on the majorant inputs (beta <= 0
/// for Oja, so its signature is widened to admit it).
template <Scalar S> Output<S> majorant_forward(Rule r, const Inputs<S> &maj, const Options &opts) {
  if (r != Rule::gated_oja)
    return run(r, Form::recurrent, maj, opts);
  Signature sig = gated_oja::signature;
  sig.beta_low = -1.0;
  sig.beta_high = 0.0;
  return forward_heads(maj, opts, sig, [](const Head<S> &x, const S &scale) {
    return gated_oja::recurrent_head(x, scale);
  });
}

/// Longest sequence of the call.
inline std::size_t longest(const Case &c) {
  if (c.cu_seqlens.empty())
    return c.T;
  std::int64_t L = 0;
  for (std::size_t n = 1; n < c.cu_seqlens.size(); ++n)
    L = std::max(L, c.cu_seqlens[n] - c.cu_seqlens[n - 1]);
  return static_cast<std::size_t>(L);
}

/// Gmax: the largest sum |g| over one sequence, head and gate column.
inline double largest_log_decay(const Case &c, const Inputs<F128> &in) {
  if (in.g.empty())
    return 0;
  const std::size_t D = in.g.dim(3);
  double worst = 0;
  for (const Sequence &s : sequences_of(c.B, c.T, c.options()))
    for (std::size_t h = 0; h < c.H; ++h)
      for (std::size_t d = 0; d < D; ++d) {
        double sum = 0;
        for (std::size_t t = s.begin; t < s.end; ++t)
          sum += std::abs(to_double(in.g(s.batch, t, h, d)));
        worst = std::max(worst, sum);
      }
  return worst;
}

/// cond_inf(F) = ||F||_inf ||F^-1||_inf for a unit lower triangular F and its inverse E.
template <Scalar S> double condition_inf(const Mat<S> &F, const Mat<S> &E) {
  if (F.rows() == 0)
    return 1;
  return to_double(S(F.cwiseAbs().rowwise().sum().maxCoeff())) *
         to_double(S(E.cwiseAbs().rowwise().sum().maxCoeff()));
}

/// \brief The magnitudes the bounds are made of.
struct Magnitudes {
  double n = 0;          ///< depth of the longest chain of a forward form
  double kappa = 1;      ///< max over chunks (C and C = L) of cond_inf of the triangular system
  Output<F128> maj;      ///< the majorant's outputs
  F128 o = 0, state = 0; ///< their largest elements (in F128: they may be tiny)
};

/// kappa over every head of every sequence, for chunk sizes C and L.
inline double kappa_of(const Case &c, const Inputs<F128> &in) {
  double kappa = 1;
  const Options opts = c.options();
  const Signature sig = c.rule == Rule::gated_oja ? gated_oja::signature
                        : c.rule == Rule::iplr    ? iplr::signature
                                                  : dplr::signature;
  const F128 scale = scale_of<F128>(opts, c.K);
  for (const Sequence &seq : sequences_of(c.B, c.T, opts))
    for (std::size_t h = 0; h < c.H; ++h) {
      const Head<F128> x = slice_head(in, seq, h, sig);
      const std::size_t L = std::max<std::size_t>(1, seq.length());
      for (std::size_t C : {c.C, L}) {
        if (c.rule == Rule::gated_oja) {
          const auto st = gated_oja::chunk_forward_head(x, scale, C).stages;
          for (std::size_t i = 0; i < st.A.size(); ++i)
            kappa = std::max(kappa, condition_inf(Mat<F128>(Mat<F128>::Identity(st.A0[i].rows(),
                                                                                st.A0[i].cols()) +
                                                            st.A0[i]),
                                                  st.A[i]));
        } else {
          const Head<F128> core =
              c.rule == Rule::iplr ? iplr::as_core(x) : dplr::as_core(x, param_of(c.rule));
          const auto st = dplr::chunk_forward_head(core, scale, C).stages;
          for (std::size_t i = 0; i < st.F.size(); ++i)
            kappa = std::max(kappa, condition_inf(st.F[i], st.E[i]));
        }
      }
    }
  return kappa;
}

inline F128 max_abs(const Tensor<F128> &x) {
  using std::abs;
  F128 m = 0;
  for (std::size_t i = 0; i < x.size(); ++i)
    if (abs(x[i]) > m)
      m = abs(x[i]);
  return m;
}

inline Magnitudes magnitudes(const Case &c, const Inputs<F128> &in) {
  Magnitudes m;
  const double L = static_cast<double>(longest(c));
  m.n = (L + static_cast<double>(c.C)) * static_cast<double>(c.K + c.V + 5) + 10 +
        (2 * L + 2) * largest_log_decay(c, in);
  m.kappa = kappa_of(c, in);
  m.maj = majorant_forward(c.rule, majorant_inputs(c.rule, in), c.options());
  m.o = max_abs(m.maj.o);
  m.state = max_abs(m.maj.final_state);
  return m;
}

/// gamma_n, refusing a bound that would be vacuous (n u >= 1/2).
inline F128 gamma(double n) {
  const double nu = n * to_double(scalar_traits<F128>::epsilon()) / 2;
  if (!(nu < 0.5))
    throw std::runtime_error("gamma_n: n u = " + std::to_string(nu) + " leaves no bound");
  return gamma_n<F128>(n);
}

/// factor * gamma_n * kappa * M + n * (smallest normal).
inline F128 bound_of(double n, double kappa, const F128 &M, double factor) {
  return F128(factor) * gamma(n) * F128(kappa) * M + F128(n) * std::numeric_limits<F128>::min();
}

/// Compares a with the reference b under a uniform bound; appends a line to `why`.
inline bool agree(const std::string &what, const Tensor<F128> &a, const Tensor<F128> &b,
                  const F128 &bound, std::string &why) {
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
inline bool outputs_agree(const std::string &what, const Output<F128> &a, const Output<F128> &b,
                          const Magnitudes &m, std::string &why) {
  const bool o = agree(what + " o", a.o, b.o, bound_of(m.n, m.kappa, m.o, 2), why);
  const bool s = agree(what + " final_state", a.final_state, b.final_state,
                       bound_of(m.n, m.kappa, m.state, 2), why);
  return o && s;
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
