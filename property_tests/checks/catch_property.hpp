// ruleproof property checks inside Catch2 v2: one rc::prop per rule, cases from the shared
// generators, the verdict from the shared checks (run.hpp). A failure prints the shrunk case
// (every shape, the chunk size and every value), what differed and by how much against its
// bound, and the seed: replay with RC_PARAMS="seed=N" and the test's name.
// A larger sweep: RC_PARAMS="max_success=1000" (100 cases a rule by default).
#pragma once

#include <rapidcheck/catch.h>

#include <vector>

#include "generators.hpp"
#include "run.hpp"

namespace ruleproof::checks {

/// Checks property p for every rule of rules::All in scalar s, or for the rows given (sympow's
/// rows of verify, sympow_infos()).
inline void check_every_rule(ScalarKind s, Property p,
                             const std::vector<RuleInfo> &rows = rule_infos()) {
  const std::uint64_t seed = rc::detail::configuration().testParams.seed;
  INFO("RapidCheck seed " << seed << ": replay with RC_PARAMS=\"seed=" << seed << "\"");
  for (const RuleInfo &r : rows) {
    if (!applies(p, r)) {
      WARN(name_of(p) << " does not apply to " << r.name() << ": " << not_applicable(p, r));
      continue;
    }
    rc::prop(r.name() + " in " + name_of(s), [s, p, r, seed] {
      RC_LOG() << "seed=" << seed << " (replay: RC_PARAMS=\"seed=" << seed << "\")\n";
      const Case c = *gen::case_for(p, r);
      const Report report = run_check(s, p, r.name(), c);
      RC_LOG() << name_of(p) << ", rule " << r.name() << ", " << name_of(s) << ":\n"
               << report.summary();
      RC_ASSERT(report.holds());
    });
  }
}

} // namespace ruleproof::checks
