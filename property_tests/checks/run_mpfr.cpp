// ruleproof property checks in MPFR, the deeper truth, at a number of digits chosen at run
// time. MPFR's default precision is per thread, so every call sets it on its own thread.
#include <atomic>

#include "reference/core/mpfr.hpp"

#include "run.hpp"
#include "run_family.hpp"

namespace ruleproof::checks {

namespace {
std::atomic<unsigned> mpfr_digits{50};
}

void set_check_mpfr_digits(unsigned digits10) { mpfr_digits = digits10; }

Report run_check_mpfr(Property p, const std::string &rule, const Case &c) {
  set_mpfr_digits(mpfr_digits);
  return run_check_in<mpfr>(p, rule, c);
}

} // namespace ruleproof::checks
