// ruleproof property checks for sympow (sympow_checks.hpp), in every scalar type.
#include <stdexcept>

#include "reference/core/float128.hpp"

#include "run.hpp"
#include "sympow_checks.hpp"

namespace ruleproof::checks {

Report run_sympow_check(ScalarKind s, Property p, const std::string &rule, const Case &c) {
  bool known = false;
  for (const RuleInfo &r : sympow_infos())
    known = known || r.name() == rule;
  if (!known)
    throw std::invalid_argument("unknown rule '" + rule + "'");
  switch (s) {
  case ScalarKind::double_: return sympow_checks::check<double>(p, c);
#ifdef RULEPROOF_DOUBLE_ONLY
  default: refuse_uncompiled(s);
#else
  case ScalarKind::long_double: return sympow_checks::check<long double>(p, c);
  case ScalarKind::float128: return sympow_checks::check<float128>(p, c);
  case ScalarKind::mpfr: throw std::invalid_argument("sympow rows are not checked in mpfr");
#endif
  }
  throw std::invalid_argument("unknown scalar");
}

} // namespace ruleproof::checks
