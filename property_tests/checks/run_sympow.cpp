// ruleproof property checks for sympow (sympow_checks.hpp), in every scalar type.
#include <algorithm>
#include <stdexcept>

#include "reference/core/float128.hpp"

#include "run.hpp"
#include "sympow_checks.hpp"

namespace ruleproof::checks {

Report run_sympow_check(ScalarKind s, Property p, const std::string &rule, const Case &c) {
  const std::vector<RuleInfo> rows = sympow_infos();
  const auto row =
      std::find_if(rows.begin(), rows.end(), [&](const RuleInfo &r) { return r.name() == rule; });
  if (row == rows.end())
    throw std::invalid_argument("unknown rule '" + rule + "'");
  switch (s) {
  case ScalarKind::double_: return sympow_checks::check<double>(p, *row, c);
#ifdef RULEPROOF_DOUBLE_ONLY
  default: refuse_uncompiled(s);
#else
  case ScalarKind::long_double: return sympow_checks::check<long double>(p, *row, c);
  case ScalarKind::float128: return sympow_checks::check<float128>(p, *row, c);
  case ScalarKind::mpfr: throw std::invalid_argument("sympow rows are not checked in mpfr");
#endif
  }
  throw std::invalid_argument("unknown scalar");
}

} // namespace ruleproof::checks
