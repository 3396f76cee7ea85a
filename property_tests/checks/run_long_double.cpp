// ruleproof property checks in long double.
#include "run.hpp"
#include "run_family.hpp"

namespace ruleproof::checks {
Report run_check_long_double(Property p, const std::string &rule, const Case &c) {
  return run_check_in<long double>(p, rule, c);
}
} // namespace ruleproof::checks
