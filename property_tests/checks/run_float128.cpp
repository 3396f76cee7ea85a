// ruleproof property checks in float128, the truth precision.
#include "reference/core/float128.hpp"

#include "run.hpp"
#include "run_family.hpp"

namespace ruleproof::checks {
Report run_check_float128(Property p, const std::string &rule, const Case &c) {
  return run_check_in<float128>(p, rule, c);
}
} // namespace ruleproof::checks
