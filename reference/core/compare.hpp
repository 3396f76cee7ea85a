// ruleproof: comparing two results, with tolerances computed from the precision.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "tensor.hpp"

namespace ruleproof {

/// \brief Higham's \f$ \gamma_n = n u / (1 - n u) \f$, u the unit roundoff (eps / 2):
/// the relative error bound of a chain of n rounded operations.
template <Scalar S> S gamma_n(double n) {
  const S u = scalar_traits<S>::epsilon() / S(2);
  const S nu = from_double<S>(n) * u;
  return nu / (S(1) - nu);
}

/// \brief The decimal digits two results agree to, from their relative error: -log10 of it, 0
/// when the error reaches the size of the result itself (no digit agrees), infinite for none.
inline double digits_agreed(double relative_error) {
  if (!(relative_error > 0))
    return relative_error == 0 ? std::numeric_limits<double>::infinity() : 0.0;
  return std::max(0.0, -std::log10(relative_error));
}

/// \brief How two tensors differ: the worst element, against a bound.
struct Discrepancy {
  std::size_t worst_index = 0;
  double worst_error = 0;      ///< |a - b| at worst_index, taken in the tensors' own scalar
  double max_abs_error = 0;    ///< max |a - b|
  double max_rel_error = 0;    ///< max |a - b| / max |b| (normwise relative)
  double worst_over_bound = 0; ///< max |a - b| / bound; <= 1 holds
  double value_a = 0, value_b = 0;
  bool finite = true;        ///< false when either side has a NaN or infinity
  std::size_t undecided = 0; ///< elements whose bound is infinite (see compare)
  bool holds() const { return finite && worst_over_bound <= 1.0; }
  /// Decimal digits the two agree to, normwise.
  double digits() const { return digits_agreed(max_rel_error); }
};

/// \brief Compares a with the reference b element by element; `bound(i)` is the largest
/// difference element i may show. NaN and infinity are checked first: they never pass, except
/// where the bound is +infinity, which says the precision cannot decide that element on this
/// input (a normalised denominator whose rounding may reach its own size); such elements are
/// counted in `undecided` and take no part in the comparison.
template <Scalar S, class Bound>
Discrepancy compare(const Tensor<S> &a, const Tensor<S> &b, Bound bound) {
  using std::abs;
  Discrepancy d;
  if (a.shape() != b.shape()) {
    d.finite = false;
    return d;
  }
  S scale(0), worst(0), worst_ratio(0);
  for (std::size_t i = 0; i < a.size(); ++i) {
    const S allowed = bound(i);
    if (allowed > S(0) && !is_finite(allowed)) {
      ++d.undecided;
      continue;
    }
    if (!is_finite(a[i]) || !is_finite(b[i])) {
      d.finite = false;
      d.worst_index = i;
      d.value_a = to_double(a[i]);
      d.value_b = to_double(b[i]);
      d.worst_error = std::numeric_limits<double>::quiet_NaN();
      return d;
    }
    const S diff = abs(a[i] - b[i]);
    const S ratio = diff == S(0) ? S(0) : (allowed > S(0) ? S(diff / allowed) : S(1e30));
    if (abs(b[i]) > scale)
      scale = abs(b[i]);
    if (diff > worst)
      worst = diff;
    if (ratio > worst_ratio) {
      worst_ratio = ratio;
      d.worst_index = i;
    }
  }
  d.max_abs_error = to_double(worst);
  d.max_rel_error = scale > S(0) ? to_double(S(worst / scale)) : to_double(worst);
  d.worst_over_bound = to_double(worst_ratio);
  if (a.size() > 0) {
    d.value_a = to_double(a[d.worst_index]);
    d.value_b = to_double(b[d.worst_index]);
    d.worst_error = to_double(S(abs(a[d.worst_index] - b[d.worst_index])));
  }
  return d;
}

/// Exact equality, element by element (causality: later inputs change nothing earlier).
template <class S> bool identical(const Tensor<S> &a, const Tensor<S> &b) {
  if (a.shape() != b.shape())
    return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i]))
      return false;
  return true;
}

} // namespace ruleproof
