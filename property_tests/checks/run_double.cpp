// ruleproof property checks in double.
#include "run.hpp"
#include "run_family.hpp"

namespace ruleproof::checks {
Report run_check_double(Property p, const std::string &rule, const Case &c) {
  return run_check_in<double>(p, rule, c);
}
} // namespace ruleproof::checks
