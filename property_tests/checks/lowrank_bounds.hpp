// ruleproof property checks: the error bounds of the low-rank rules (dplr in its three
// parameterisations, iplr, gated_oja; rules::BoundFamily::low_rank), computed from the
// precision (Higham's gamma_n), a computed magnitude and the condition number of the chunk's
// triangular system. The ONE copy of this derivation: the shared checks (properties.hpp, for
// `ruleproof verify` and the Catch property suite) and the low-rank rules' own tests
// (dplr_support.hpp) both use it.
//
// Why neither the GLA family's argument nor the delta family's carries over: the transitions
// A_t - a_t d_t^T (dplr, iplr) and A_t (I - beta_t v_t v_t^T) (gated_oja) have entries of
// either sign, so the rule run on |inputs| is no majorant of its terms; and dplr's transition
// need not be a contraction (a_t and b_t are independent, its eigenvalue 1 - b_t^T a_t lies
// in [0, 2] for rows of norm <= 1).
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
// from the stages for the chunk size C and for C = L; the whole sequence as one chunk bounds
// every contiguous sub-chunk, as in delta_bounds.hpp). Two forms each within gamma_n kappa M
// of the truth differ by at most 2 gamma_n kappa M, M the largest element of the majorant.
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
#include <limits>
#include <string>
#include <vector>

#include "delta_bounds.hpp"
#include "reference/core/gradients.hpp"
#include "reference/dplr/core.hpp"
#include "reference/gated_oja/recurrent.hpp"
#include "reference/gated_oja/rule.hpp"
#include "reference/iplr/recurrent.hpp"
#include "rounding.hpp"

#include "reference/rule_id.hpp"

namespace ruleproof::checks::lowrank {

/// \brief The low-rank rules (dplr, dplr_fla, dplr_no_gate, iplr, gated_oja): the registry's
/// ids (reference/rule_id.hpp), named as the registry names them; the functions below take
/// those five alone.
using Rule = RuleId;

inline dplr::Parameterisation param_of(Rule r) {
  return r == Rule::dplr       ? dplr::Parameterisation::seed
         : r == Rule::dplr_fla ? dplr::Parameterisation::fla
                               : dplr::Parameterisation::no_gate;
}

inline Signature signature_of(Rule r) {
  return r == Rule::gated_oja ? gated_oja::signature
         : r == Rule::iplr    ? iplr::signature
                              : dplr::signature;
}

/// The rule's recurrent form, its definition.
template <Scalar S> Output<S> recurrent(Rule r, const Inputs<S> &in, const Options &opts) {
  if (r == Rule::iplr)
    return iplr::recurrent(in, opts);
  if (r == Rule::gated_oja)
    return gated_oja::recurrent(in, opts);
  return dplr::recurrent(in, opts, dplr::Variant{param_of(r)});
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
  make_abs(in.a, r == Rule::dplr || r == Rule::dplr_no_gate);
  make_abs(in.b);
  return in;
}

/// \brief The majorant forward: the rule's recurrent form on the majorant inputs (beta <= 0
/// for Oja, so its signature is widened to admit it).
template <Scalar S> Output<S> majorant_forward(Rule r, const Inputs<S> &maj, const Options &opts) {
  if (r != Rule::gated_oja)
    return recurrent(r, maj, opts);
  Signature sig = gated_oja::signature;
  sig.beta_low = -std::numeric_limits<double>::infinity();
  sig.beta_high = 0.0;
  return forward_heads(maj, opts, sig, [](const Head<S> &x, const S &scale) {
    return gated_oja::recurrent_head(x, scale);
  });
}

/// kappa over every head of every sequence, for chunk sizes opts.chunk_size and L (the
/// chunk's unit lower triangular system: dplr's F = I + A_ba, gated_oja's I + A0).
template <Scalar S> double kappa_of(Rule r, const Inputs<S> &in, const Options &opts) {
  double kappa = 1;
  const Signature sig = signature_of(r);
  const S scale = scale_of<S>(opts, in.q.dim(3));
  for (const Sequence &seq : sequences_of(in.q.dim(0), in.q.dim(1), opts))
    for (std::size_t h = 0; h < in.q.dim(2); ++h) {
      const Head<S> x = slice_head(in, seq, h, sig);
      const std::size_t L = std::max<std::size_t>(1, seq.length());
      for (std::size_t C : {opts.chunk_size, L}) {
        if (r == Rule::gated_oja) {
          kappa = std::max(kappa, gated_oja::chunk_condition(x, scale, C));
        } else {
          const Head<S> core = r == Rule::iplr ? iplr::as_core(x) : dplr::as_core(x, param_of(r));
          kappa = std::max(kappa, dplr::chunk_condition(core, scale, C));
        }
      }
    }
  return kappa;
}

template <Scalar S> S max_abs(const Tensor<S> &x) {
  using std::abs;
  S m(0);
  for (std::size_t i = 0; i < x.size(); ++i)
    if (abs(x[i]) > m)
      m = abs(x[i]);
  return m;
}

/// \brief The magnitudes the bounds are made of.
template <class S> struct Magnitudes {
  double n = 0;     ///< depth of the longest chain of a forward form
  double L = 0;     ///< the longest sequence
  double kappa = 1; ///< max over chunks (C and C = L) of cond_inf of the triangular system
  Output<S> maj;    ///< the majorant's outputs
  S o{0}, state{0}; ///< their largest elements (in S: they may be tiny)
};

/// The magnitudes of a call of rule r with chunk size opts.chunk_size.
template <Scalar S> Magnitudes<S> magnitudes(Rule r, const Inputs<S> &in, const Options &opts) {
  Magnitudes<S> m;
  m.L = static_cast<double>(longest_sequence(in.q.dim(0), in.q.dim(1), opts));
  m.n = (m.L + static_cast<double>(opts.chunk_size)) *
            static_cast<double>(in.q.dim(3) + in.v.dim(3) + 5) +
        10 + (2 * m.L + 2) * largest_log_decay(in.g, opts);
  m.kappa = kappa_of(r, in, opts);
  Options full = opts;
  full.output_final_state = true;
  m.maj = majorant_forward(r, majorant_inputs(r, in), full);
  m.o = max_abs(m.maj.o);
  m.state = max_abs(m.maj.final_state);
  return m;
}

/// factor * gamma_n * kappa * M + n * (smallest normal).
template <Scalar S> S bound_of(double n, double kappa, const S &M, double factor) {
  return from_double<S>(factor) * checked_gamma<S>(n) * from_double<S>(kappa) * M +
         from_double<S>(n) * std::numeric_limits<S>::min();
}

/// \brief The forward bounds of two forms' difference: 2 gamma_n kappa M for the outputs and
/// for the final states, M the largest element of the majorant's.
template <class S> struct ForwardBound { S o, state; };
template <Scalar S> ForwardBound<S> forward_bound(const Magnitudes<S> &m) {
  return {bound_of(m.n, m.kappa, m.o, 2), bound_of(m.n, m.kappa, m.state, 2)};
}

/// \brief The gradient bounds (see the top of this file), uniform over each gradient.
template <Scalar S>
GradientBound<S> gradient_bound(Rule r, const Inputs<S> &in, const Cotangents<S> &ct,
                                const Options &opts, const Magnitudes<S> &m) {
  using D = Dual<S>;
  using std::abs;
  Cotangents<S> ct_abs = ct;
  make_abs(ct_abs.d_o);
  make_abs(ct_abs.d_ht);
  Options full = opts;
  full.output_final_state = true;
  const Grads<S> maj_grads = dual_grads(majorant_inputs(r, in), ct_abs, [&](const Inputs<D> &x) {
    return majorant_forward(r, x, full);
  });
  // M'_g: 2 sum_{s >= t} sum_x |x_s| M'_x,s (+ the final state's term), over every decayed x.
  Tensor<S> g_mag;
  if (!in.g.empty()) {
    g_mag = Tensor<S>(in.g.shape());
    const std::size_t G = in.g.dim(3), H = in.q.dim(2);
    const std::size_t K = in.q.dim(3), V = in.v.dim(3);
    const auto add = [&](const Tensor<S> &x, const Tensor<S> &dx) {
      if (x.empty() || x.dim(3) != G)
        return;
      for (std::size_t i = 0; i < x.size(); ++i)
        g_mag[i] += S(2) * abs(x[i]) * abs(dx[i]);
    };
    if (r == Rule::gated_oja) {
      add(in.v, maj_grads.dv);
      add(m.maj.o, ct_abs.d_o); // o . dO
      add(in.v, maj_grads.dv);  // v enters on both sides of the identity
      add(in.v, maj_grads.dv);
    } else {
      add(in.q, maj_grads.dq);
      add(in.k, maj_grads.dk);
      add(in.a, maj_grads.da);
      add(in.b, maj_grads.db);
    }
    const bool oja = r == Rule::gated_oja;
    for (const Sequence &seq : sequences_of(in.q.dim(0), in.q.dim(1), opts))
      for (std::size_t h = 0; h < H; ++h) {
        std::vector<S> suffix(G, S(0));
        for (std::size_t j = 0; j < G && !ct_abs.d_ht.empty(); ++j) // the final state's term
          for (std::size_t i = 0; i < (oja ? K : V); ++i) {
            const std::size_t kk = oja ? i : j, vv = oja ? j : i;
            suffix[j] +=
                abs(m.maj.final_state(seq.index, h, kk, vv) * ct_abs.d_ht(seq.index, h, kk, vv));
          }
        for (std::size_t t = seq.end; t-- > seq.begin;)
          for (std::size_t j = 0; j < G; ++j) {
            suffix[j] += g_mag(seq.batch, t, h, j);
            g_mag(seq.batch, t, h, j) = suffix[j];
          }
      }
  }
  const double n_back = 2 * m.n + m.L + 10;
  GradientBound<S> b;
  b.rounding = S(2) * checked_gamma<S>(m.n + static_cast<double>(ct.d_o.size() + ct.d_ht.size())) *
               loss(m.maj, ct_abs);
  for (const auto &f : grad_fields<S>()) {
    const Tensor<S> &x = in.*f.input;
    if (x.empty())
      continue;
    const S M = max_abs(f.input == &Inputs<S>::g ? g_mag : maj_grads.*f.grad);
    const S dual = bound_of(n_back, 1, M, 1);
    b.dual.*f.grad = Tensor<S>(x.shape(), dual);
    b.analytic.*f.grad = Tensor<S>(x.shape(), S(bound_of(n_back, m.kappa * m.kappa, M, 2) + dual));
  }
  return b;
}

} // namespace ruleproof::checks::lowrank
