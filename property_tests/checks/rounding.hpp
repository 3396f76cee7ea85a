// ruleproof property checks: what every family's error bound is made of (properties.hpp,
// delta_bounds.hpp, lowrank_bounds.hpp, softmax_bounds.hpp): Higham's gamma_n refused where
// it would be vacuous, the longest sequence of a call, its largest cumulative log-decay, and
// the shape of a gradient check's bounds.
#pragma once

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "reference/core/compare.hpp"
#include "reference/core/inputs.hpp"

namespace ruleproof::checks {

/// gamma_n in S, refusing a bound that would be vacuous (n u >= 1/2).
template <Scalar S> S checked_gamma(double n) {
  const double nu = n * to_double(scalar_traits<S>::epsilon()) / 2;
  if (!(nu < 0.5))
    throw std::runtime_error("gamma_n: n u = " + std::to_string(nu) + " leaves no bound");
  return gamma_n<S>(n);
}

/// The longest sequence of a call of B rows of T steps.
inline std::size_t longest_sequence(std::size_t B, std::size_t T, const Options &opts) {
  std::size_t L = 0;
  for (const Sequence &s : sequences_of(B, T, opts))
    L = std::max(L, s.length());
  return L;
}

/// Gmax: the largest sum |g| over one sequence, head and gate column of a log-gate g
/// ([B, T, H] or [B, T, H, D]; 0 without a gate).
template <Scalar S> double largest_log_decay(const Tensor<S> &g, const Options &opts) {
  if (g.empty())
    return 0;
  const std::size_t B = g.dim(0), T = g.dim(1), H = g.dim(2);
  const std::size_t D = g.rank() == 4 ? g.dim(3) : 1;
  double worst = 0;
  for (const Sequence &s : sequences_of(B, T, opts))
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t d = 0; d < D; ++d) {
        double sum = 0;
        for (std::size_t t = s.begin; t < s.end; ++t)
          sum += std::abs(to_double(g[((s.batch * T + t) * H + h) * D + d]));
        worst = std::max(worst, sum);
      }
  return worst;
}

/// \brief The bounds of the gradient check, element by element: `dual` on the exact (dual)
/// gradient's own rounding, `analytic` on |chunk_backward - dual|, and `rounding`, the
/// rounding of one loss evaluation, which finite differences divide by their step h.
template <class S> struct GradientBound {
  Grads<S> dual, analytic;
  S rounding{0};
};

} // namespace ruleproof::checks
