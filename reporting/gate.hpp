// ruleproof: the CI gate (`ruleproof gate`): a run compared with a committed baseline of the
// same command, result by result (matched by id). The gate fails on
//   - a new failure: a result that fails now and did not fail in the baseline (or was not in it),
//   - any NaN in a result's errors (whatever the baseline said),
//   - an error that grew: error/allowed now above `factor` times the baseline's (the baseline's
//     taken as at least `min_ratio`, so noise far below what the precision allows never counts),
//   - a result that no longer holds (now undecided or ambiguous), or that is missing from the
//     run.
// A result that fails in both is a known failure: listed, not a regression. And the shards of
// a run joined into one (merge_shards), as the unsharded run writes it.
#pragma once

#include <string>
#include <vector>

#include "result.hpp"

namespace ruleproof::reports {

struct GateOptions {
  double factor = 2;       ///< an error may grow this much before the gate fails
  double min_ratio = 0.01; ///< error/allowed below this is noise
};

enum class Finding {
  new_failure,
  not_finite,
  grew,
  no_longer_holds,
  missing,
  known_failure, ///< fails in the baseline too: not a regression
  new_result,    ///< holds, and was not in the baseline: not a regression
  unchanged      ///< not a regression
};
std::string to_string(Finding f);
bool is_regression(Finding f);

/// \brief One result compared: the finding and a sentence saying it with the numbers.
struct GateItem {
  std::string id;
  Finding finding = Finding::unchanged;
  std::string message;
  Result result; ///< the current result (the baseline's when missing)
};

struct GateReport {
  std::vector<GateItem> items;
  std::vector<std::string>
      notes; ///< differences in the envelopes worth saying (seed, command line)
  std::size_t regressions() const;
  bool passes() const { return regressions() == 0; }
};

/// Compares `current` with `baseline`. Throws ReportError when they cannot be compared: another
/// command, or a shard (merge the shards first).
GateReport compare_with_baseline(const Run &baseline, const Run &current, const GateOptions &o);

/// JUnit XML (one testsuite, one testcase per result: a failure element for each regression,
/// skipped for a known failure), for CI systems that display test reports.
std::string junit_xml(const GateReport &g, const Run &current);

/// The gate's verdict as Markdown: the regressions, the known failures, the counts.
std::string gate_markdown(const GateReport &g, const Run &current, const std::string &baseline);

/// Joins the shards of one run (each written with --shard i/n) into the run without --shard
/// would have written: the same results and details, only the timing fields differ. Throws
/// ReportError naming the file when the shards are not the n shards of one run.
Run merge_shards(const std::vector<Run> &shards, const std::vector<std::string> &names);

} // namespace ruleproof::reports
