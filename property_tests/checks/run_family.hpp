// ruleproof property checks, one scalar and one bound family of rules at a time: the checks of
// each family instantiated for each scalar in that scalar's unit (run_scalar.cpp.in, configured
// by property_tests/CMakeLists.txt), the rules' forms compiled once in the truth library
// (reference/truth/forms.hpp).
#pragma once

#include <optional>
#include <stdexcept>
#include <string>

#include "case.hpp"
#include "reference/truth/forms.hpp"

namespace ruleproof::checks {

/// Property p for the rule called `rule` in S when that rule is of bound family F; nothing
/// otherwise (properties.hpp defines it; run_scalar.cpp.in instantiates it).
template <class S, rules::BoundFamily F>
std::optional<Report> run_check_in_family(Property p, const std::string &rule, const Case &c);

/// Property p for the rule called `rule` in S, asked of each family's unit in turn; throws
/// std::invalid_argument when no rule has that name.
template <class S> Report run_check_in(Property p, const std::string &rule, const Case &c) {
  using enum rules::BoundFamily;
  for (auto family :
       {run_check_in_family<S, nonnegative_transition>, run_check_in_family<S, contraction>,
        run_check_in_family<S, low_rank>, run_check_in_family<S, softmax>})
    if (std::optional<Report> r = family(p, rule, c))
      return *r;
  throw std::invalid_argument("unknown rule '" + rule + "'");
}

} // namespace ruleproof::checks
