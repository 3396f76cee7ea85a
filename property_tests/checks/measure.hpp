// ruleproof property checks: how a form's result is compared against its reference, into a
// Measure (case.hpp): under an element-wise bound, or bit for bit. Shared by the checks of
// every rule (properties.hpp) and sympow's (sympow_checks.hpp).
#pragma once

#include <algorithm>
#include <limits>
#include <sstream>
#include <string>

#include "case.hpp"
#include "reference/core/compare.hpp"

namespace ruleproof::checks::detail {

/// Compares a against the reference b with an element-wise bound, into a Measure.
template <class S>
void measure(Measure &m, const std::string &what, const Tensor<S> &a, const Tensor<S> &b,
             const Tensor<S> &bound) {
  if (a.shape() != b.shape()) {
    m.finite = false;
    m.where = what + ": shape " + shape_string(a.shape()) + " vs " + shape_string(b.shape());
    return;
  }
  if (bound.size() != b.size()) {
    m.finite = false;
    m.where = what + ": bound of shape " + shape_string(bound.shape()) + " for " +
              shape_string(b.shape());
    return;
  }
  const Discrepancy d = compare(a, b, [&](std::size_t i) { return bound[i]; });
  m.elements += a.size() - d.undecided;
  m.undecided += d.undecided;
  if (!d.finite) {
    m.finite = false;
    std::ostringstream os;
    os << what << "[" << d.worst_index << "] not finite: " << d.value_a << " vs " << d.value_b;
    m.where = os.str();
    m.set_worst(what, a.shape(), d.worst_index, d.worst_error,
                bound.size() ? to_double(bound[d.worst_index]) : 0.0);
    m.worst_ratio = std::numeric_limits<double>::infinity();
    return;
  }
  m.worst_rel = std::max(m.worst_rel, d.max_rel_error);
  if (d.worst_over_bound > m.worst_ratio || (m.where.empty() && d.worst_over_bound > 0)) {
    m.worst_ratio = d.worst_over_bound;
    std::ostringstream os;
    os.precision(17);
    os << what << "[" << d.worst_index << "] = " << d.value_a << " vs " << d.value_b << " (bound "
       << to_double(bound.size() ? bound[d.worst_index] : S(0)) << ")";
    m.where = os.str();
    m.set_worst(what, a.shape(), d.worst_index, d.worst_error,
                to_double(bound.size() ? bound[d.worst_index] : S(0)));
  }
}

/// Bitwise equality, as a Measure: error/bound is 0 when identical, infinity otherwise. With
/// `bound` (the derived bound of each element, or empty), an element whose bound is +infinity (a
/// normalised denominator whose rounding may reach its own size, so that the computed value may
/// be 0/0) is undecided, as in compare; every other one must be identical.
template <class S>
void measure_identical(Measure &m, const std::string &what, const Tensor<S> &a, const Tensor<S> &b,
                       const Tensor<S> &bound = Tensor<S>()) {
  Tensor<S> zero_or_undecided(a.shape(), S(0));
  for (std::size_t i = 0; i < bound.size() && i < zero_or_undecided.size(); ++i)
    if (!is_finite(bound[i]))
      zero_or_undecided[i] = scalar_traits<S>::infinity();
  measure(m, what, a, b, zero_or_undecided);
  if (m.worst_ratio > 0 && m.finite)
    m.worst_ratio = std::numeric_limits<double>::infinity();
}

} // namespace ruleproof::checks::detail
