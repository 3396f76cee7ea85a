// ruleproof property checks: the entry points the Catch tests and `ruleproof verify` call.
// One implementation of every check (properties.hpp), compiled once per scalar type in
// run_double.cpp, run_long_double.cpp and run_float128.cpp (library ruleproof_checks).
#pragma once

#include <string>
#include <vector>

#include "case.hpp"

namespace ruleproof::checks {

/// Every rule of rules::All, in table order, with what its generators need.
std::vector<RuleInfo> rule_infos();

/// The rule called `name`; throws std::invalid_argument when there is none.
RuleInfo rule_info(const std::string &name);

/// sympow's rows (sympow_checks.hpp): every variant (plain, fixed rotary, scalar gating,
/// data-dependent rotation, gating and rotation) x p in {1, 2, 3, 4, 6}, normalised for even
/// p, plain for odd; named sympow_p<p>[_normalised]_<variant>.
std::vector<RuleInfo> sympow_infos();

/// Runs property p on case c for the rule called `rule` (of rule_infos() or sympow_infos()),
/// in scalar s. Throws std::invalid_argument for an unknown rule; a reference's InputError
/// passes through.
Report run_check(ScalarKind s, Property p, const std::string &rule, const Case &c);

/// The scalars this build compiles the checks in: every ScalarKind, or double alone where the
/// build says RULEPROOF_DOUBLE_ONLY (the sanitizer build); run_check throws
/// std::invalid_argument for another.
std::vector<ScalarKind> compiled_scalars();
/// Throws std::invalid_argument: s is not among compiled_scalars().
[[noreturn]] void refuse_uncompiled(ScalarKind s);

Report run_check_double(Property p, const std::string &rule, const Case &c);
Report run_check_long_double(Property p, const std::string &rule, const Case &c);
Report run_check_float128(Property p, const std::string &rule, const Case &c);
/// In MPFR at the digits last given to set_check_mpfr_digits (50 until then), on any thread.
Report run_check_mpfr(Property p, const std::string &rule, const Case &c);
void set_check_mpfr_digits(unsigned digits10);

/// sympow's checks (run_sympow.cpp); `rule` must be one of sympow_infos().
Report run_sympow_check(ScalarKind s, Property p, const std::string &rule, const Case &c);

} // namespace ruleproof::checks
