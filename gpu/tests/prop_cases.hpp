// ruleproof: rc::prop (rapidcheck/catch.h) with a number of cases chosen per property, for
// properties whose cases are costly (a float128 truth each, or a GPU run). RC_PARAMS still
// wins: RC_PARAMS="max_success=200" runs 200.
#pragma once

#include <cstdlib>
#include <sstream>
#include <string>

#include <rapidcheck/catch.h>

namespace ruleproof::gpu::check {

template <class Testable>
void prop_cases(const std::string &description, int cases, Testable &&testable) {
  SECTION(description) {
    rc::detail::TestParams params = rc::detail::configuration().testParams;
    const char *env = std::getenv("RC_PARAMS");
    if (!env || std::string(env).find("max_success") == std::string::npos)
      params.maxSuccess = cases;
    const auto result = rc::detail::checkTestable(std::forward<Testable>(testable),
                                                  rc::detail::TestMetadata{}, params);
    if (result.template is<rc::detail::SuccessResult>()) {
      SUCCEED();
    } else {
      std::ostringstream ss;
      rc::detail::printResultMessage(result, ss);
      INFO(ss.str() << "\n");
      FAIL();
    }
  }
}

} // namespace ruleproof::gpu::check
