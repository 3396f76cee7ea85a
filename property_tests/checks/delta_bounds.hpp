// ruleproof property checks: the error bounds of the delta-rule family (delta_rule,
// gated_delta_rule, kda), derived from the precision (Higham's gamma_n), magnitudes computed
// on the input and the condition number of the chunkwise triangular systems. The ONE copy of
// this derivation: the shared checks (properties.hpp, for `ruleproof verify` and the Catch
// property suite) and the delta family's own tests (delta_support.hpp) both use it.
//
// Why the GLA family's argument does not carry over: there M is the recurrent form run on
// |inputs|, valid because every transition has nonnegative entries, so no term can cancel.
// The delta transition I - beta k k^T has entries of either sign. What holds instead:
//
// Domain: keys with ||k||_2 <= 1 (normalised in the op, or drawn so), beta in (0, 1] or
// (0, 2], g <= 0. Then every step I - beta_t k_t k_t^T has eigenvalues in [-1, 1] and the
// decay is <= 1, so each step is a contraction in the Frobenius norm:
//   ||S_t||_F <= M = ||S_0||_F + sum_s beta_s ||k_s|| ||v_s||,
// and a rounding error made at one step is not amplified by later ones.
//
// Forward. A chain of n = (T + C)(K + V + 3) rounded operations lies behind one element (T
// updates, each a dot product of K terms and 3 more operations; the chunkwise and parallel
// forms add products over C rows and V columns). The chunkwise forms solve (I + A0) X = B
// by forward substitution, whose error is amplified by kappa = cond_inf(I + A0) (the
// largest over the chunks of size C and over the whole sequence, which as one chunk bounds
// every contiguous sub-chunk: a diagonal block of a lower triangular matrix and of its
// inverse). The cumulative gate g_cum is summed with absolute error gamma_n span (span: the
// largest sum |g| over a chunk), which exp(g_cum_i - g_cum_j) turns into a relative error:
//   |state difference| <= gamma_n kappa M (1 + 2 span),  outputs: times max(1, ||scale q_t||).
//
// Gradients. Each gradient of <dO, O> + <dS_T, S_T> is a sum over the cotangent rows of
// products through the forward and the backward sweep (twice the chain, 2n), with the
// forward solve and its transpose (kappa^2), of magnitude at most
//   (cotangent mass) (1 + M)^2 (1 + max ||scale q||) (l2norm's 1 / ||x|| when normalising),
// cotangent mass = sum of the row norms of dO and dS_T. Finite differences add the
// rounding of the two loss evaluations, gamma_n kappa (mass (1 + M)(1 + max ||q~||)), over h.
#pragma once

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "reference/core/compare.hpp"
#include "reference/kda/rule.hpp"
#include "reference/kda/variant.hpp"
#include "reference/shared/chunk.hpp"

namespace ruleproof::checks::delta {

/// Every head of every sequence, as kda's chunkwise form sees it (value heads expanded, the
/// gate as L x K, q and k normalised when the variant asks).
template <Scalar S>
std::vector<Head<S>> kda_heads(const Inputs<S> &in, const Options &opts, GateKind gate,
                               const kda::Variant &var) {
  const Inputs<S> x = kda::family::with_value_heads(in, kda::value_groups(in));
  const Signature sig = kda::signature_of(gate, var);
  std::vector<Head<S>> heads;
  for (const Sequence &seq : sequences_of(x.q.dim(0), x.q.dim(1), opts))
    for (std::size_t h = 0; h < x.v.dim(2); ++h)
      heads.push_back(kda::as_kda(slice_head(x, seq, h, sig), gate, var));
  return heads;
}

/// \brief The magnitudes the bounds are made of, computed from the inputs.
struct Magnitudes {
  double state = 0;     ///< M: max over heads of ||S_0||_F + sum_t beta_t ||k_t|| ||v_t||
  double query = 0;     ///< max_t ||scale q_t|| (after normalisation)
  double kappa = 1;     ///< max over chunks (C and the whole sequence) of cond_inf(I + A0)
  double amplify = 1;   ///< chain rule through l2norm: max 1 / sqrt(||x||^2 + eps), else 1
  double gate_span = 0; ///< max over chunks of size C and keys of sum |g| over the chunk
};

using shared::condition_inf;

/// The magnitudes of a call (chunk size opts.chunk_size).
template <Scalar S>
Magnitudes magnitudes(const Inputs<S> &in, const Options &opts, GateKind gate,
                      const kda::Variant &var) {
  Magnitudes m;
  const std::size_t K = in.q.dim(3);
  const S scale = scale_of<S>(opts, K);
  for (const Head<S> &x : kda_heads(in, opts, gate, var)) {
    double state = to_double(S(x.h0.norm()));
    for (Eigen::Index t = 0; t < x.q.rows(); ++t) {
      state += to_double(S(x.beta(t) * x.k.row(t).norm() * x.v.row(t).norm()));
      m.query = std::max(m.query, to_double(S(scale * x.q.row(t).norm())));
    }
    m.state = std::max(m.state, state);
    for (const auto &[s, n] : shared::chunks_of(x.g.rows(), opts.chunk_size))
      m.gate_span = std::max(
          m.gate_span, to_double(S(x.g.middleRows(s, n).cwiseAbs().colwise().sum().maxCoeff())));
    const std::size_t whole = std::max<std::size_t>(1, static_cast<std::size_t>(x.q.rows()));
    for (std::size_t C : {opts.chunk_size, whole})
      m.kappa = std::max(m.kappa, kda::chunk_condition(x, scale, C));
  }
  if (var.use_qk_l2norm)
    for (const Tensor<S> *x : {&in.q, &in.k})
      for (std::size_t row = 0; row < x->size() / K; ++row) {
        double norm2 = 0;
        for (std::size_t i = 0; i < K; ++i)
          norm2 += to_double((*x)[row * K + i]) * to_double((*x)[row * K + i]);
        m.amplify = std::max(m.amplify, 1 / std::sqrt(norm2 + var.l2norm_eps));
      }
  if (!std::isfinite(m.kappa) || !std::isfinite(m.state))
    throw std::runtime_error("delta bound: cond(I + A0) = " + std::to_string(m.kappa) +
                             ", M = " + std::to_string(m.state) + " leave no bound");
  return m;
}

/// n: rounded operations on the longest chain behind one output element (T steps, chunk or
/// parallel width C, K keys, V value columns).
inline double forward_ops(std::size_t T, std::size_t C, std::size_t K, std::size_t V) {
  return static_cast<double>((T + C) * (K + V + 3));
}

/// gamma_n in S, refusing a bound that would be vacuous (n u >= 1/2).
template <Scalar S> S checked_gamma(double n) {
  const double nu = n * to_double(scalar_traits<S>::epsilon()) / 2;
  if (!(nu < 0.5))
    throw std::runtime_error("delta bound: n u = " + std::to_string(nu) + " leaves no bound");
  return gamma_n<S>(n);
}

/// \brief The forward bound on two forms' difference: gamma_n kappa M (1 + 2 span) for
/// states, times max(1, max ||q~||) for outputs.
template <class S> struct ForwardBound { S o, state; };
template <Scalar S> ForwardBound<S> forward_bound(double ops, const Magnitudes &m) {
  const S base = checked_gamma<S>(ops) *
                 from_double<S>(m.kappa * std::max(m.state, 1e-300) * (1 + 2 * m.gate_span));
  return {base * from_double<S>(std::max(m.query, 1.0)), base};
}

/// Sum of the row norms of a [..., D] tensor: the mass of a cotangent.
template <Scalar S> double row_norm_sum(const Tensor<S> &x) {
  if (x.empty() || x.rank() == 0)
    return 0;
  const std::size_t D = x.dim(x.rank() - 1);
  double total = 0;
  for (std::size_t r = 0; D > 0 && r < x.size() / D; ++r) {
    double n2 = 0;
    for (std::size_t i = 0; i < D; ++i)
      n2 += to_double(x[r * D + i]) * to_double(x[r * D + i]);
    total += std::sqrt(n2);
  }
  return total;
}

/// \brief The gradient bounds: `grads` on |analytic - exact| (and the exact side's own
/// rounding), `rounding` the loss's rounding, to divide by the finite-difference step h.
template <class S> struct GradientBound { S grads, rounding; };
template <Scalar S>
GradientBound<S> gradient_bound(double ops, const Magnitudes &m, const Cotangents<S> &ct) {
  const double mass = row_norm_sum(ct.d_o) + row_norm_sum(ct.d_ht);
  const double loss_terms = mass * (1 + m.state) * (1 + m.query);
  const double grad_terms = loss_terms * (1 + m.state) * m.amplify;
  return {checked_gamma<S>(2 * ops) * from_double<S>(m.kappa * m.kappa * grad_terms),
          checked_gamma<S>(ops) * from_double<S>(m.kappa * loss_terms)};
}

} // namespace ruleproof::checks::delta
