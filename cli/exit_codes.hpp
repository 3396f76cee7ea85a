// ruleproof: the exit codes every command uses (documented in README.md).
#pragma once

namespace ruleproof::cli {

enum ExitCode : int {
  ok = 0,             ///< everything checked holds
  check_failed = 1,   ///< a property, claim or kernel check failed
  bad_input = 2,      ///< bad command line, bad file, bad tensor: nothing was computed
  internal_error = 3, ///< a bug in ruleproof itself
  regression = 4      ///< ruleproof gate: the run regressed against its baseline (a new
                      ///< failure, a NaN, an error grown beyond --factor, a result missing)
};

} // namespace ruleproof::cli
