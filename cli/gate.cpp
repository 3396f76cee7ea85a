// ruleproof gate and ruleproof merge (gate.hpp).
#include "gate.hpp"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>

#include <fmt/core.h>

#include "exit_codes.hpp"
#include "option_checks.hpp"
#include "report_output.hpp"
#include "reporting/atomic_write.hpp"
#include "reporting/gate.hpp"

namespace ruleproof::cli {

namespace {

struct GateArgs {
  std::string baseline, current = "reports/out/verify.json", junit, summary;
  bool update = false;
  reports::GateOptions options;
};

int run_gate(const GateArgs &a) {
  if (!a.junit.empty())
    expect_writable("--junit", a.junit);
  if (!a.summary.empty())
    expect_writable("--summary", a.summary);
  if (a.update)
    expect_writable("--baseline", a.baseline);
  const reports::Run current = reports::read_run(a.current);
  const bool have_baseline = std::filesystem::exists(a.baseline);
  if (!have_baseline && !a.update)
    throw reports::ReportError(a.baseline +
                               ": no such baseline; to create it from this run, say so: "
                               "ruleproof gate --baseline " +
                               a.baseline + " --current " + a.current + " --update");
  if (current.shard)
    throw reports::ReportError(a.current + fmt::format(": shard {}/{} of a run; join the shards "
                                                       "with ruleproof merge first",
                                                       current.shard->first,
                                                       current.shard->second));
  std::optional<reports::GateReport> report;
  if (have_baseline) {
    const reports::Run baseline = reports::read_run(a.baseline);
    report = reports::compare_with_baseline(baseline, current, a.options);
    for (const std::string &n : report->notes)
      fmt::print("note: {}\n", n);
    for (const reports::GateItem &i : report->items)
      if (reports::is_regression(i.finding) || i.finding == reports::Finding::known_failure)
        fmt::print("{:<15} {}: {}\n    replay: {}\n", reports::to_string(i.finding), i.id,
                   i.message, i.result.replay.command);
    fmt::print(
        "gate: {} results compared with {}: {} regression(s), {} known failure(s), {} "
        "new\n",
        report->items.size(), a.baseline, report->regressions(),
        std::count_if(report->items.begin(), report->items.end(),
                      [](const auto &i) { return i.finding == reports::Finding::known_failure; }),
        std::count_if(report->items.begin(), report->items.end(),
                      [](const auto &i) { return i.finding == reports::Finding::new_result; }));
    if (!a.junit.empty())
      reports::write_file_atomically(a.junit, reports::junit_xml(*report, current));
    if (!a.summary.empty())
      reports::write_file_atomically(a.summary,
                                     reports::gate_markdown(*report, current, a.baseline));
  }
  if (a.update) {
    reports::write_file_atomically(a.baseline, reports::to_json(current).dump(1) + "\n");
    fmt::print("gate: baseline {} {} from {} ({} results: {} hold, {} fail){}\n", a.baseline,
               have_baseline ? "replaced" : "created", a.current, current.results.size(),
               current.count(reports::Verdict::holds), current.count(reports::Verdict::fails),
               report && !report->passes()
                   ? fmt::format("; it accepts the {} regression(s) above", report->regressions())
                   : "");
    return ok;
  }
  fmt::print("gate: {}\n", report->passes() ? "passes" : "FAILS");
  return report->passes() ? ok : regression;
}

struct MergeArgs {
  std::vector<std::string> files;
  std::string out, summary;
};

int run_merge(const MergeArgs &a) {
  expect_report_writable(a.out, a.summary);
  std::vector<reports::Run> shards;
  for (const std::string &f : a.files)
    shards.push_back(reports::read_run(f));
  reports::Run merged = reports::merge_shards(shards, a.files);
  write_run_and_page(merged, a.out, a.summary);
  fmt::print("merge: {} shards of ruleproof {}, {} results ({} fail); wrote {} and {}\n",
             shards.size(), merged.command, merged.results.size(),
             merged.count(reports::Verdict::fails), a.out,
             a.summary.empty() ? reports::summary_path_for(a.out).string() : a.summary);
  return ok;
}

} // namespace

void add_gate_command(CLI::App &app, int &status) {
  auto a = std::make_shared<GateArgs>();
  CLI::App *sub = app.add_subcommand(
      "gate", "compare a run with a committed baseline (exit 0: no regression; 4: a new "
              "failure, a NaN, an error grown beyond --factor, or a result missing; 2: bad "
              "input)");
  sub->add_option("--baseline", a->baseline, "the committed baseline (a result file)")->required();
  sub->add_option("--current", a->current, "the run to judge (a result file)")
      ->capture_default_str();
  sub->add_flag("--update", a->update,
                "write the current run as the new baseline (atomically), after reporting what "
                "changes; without it the baseline is never written");
  sub->add_option("--factor", a->options.factor,
                  "an error/allowed may grow this many times over the baseline's")
      ->check(CLI::Range(1.0, 1e12))
      ->capture_default_str();
  sub->add_option("--min-ratio", a->options.min_ratio,
                  "error/allowed below this counts as noise in the growth test")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  sub->add_option("--junit", a->junit, "write JUnit XML (one testcase per result) here");
  sub->add_option("--summary", a->summary, "write the gate's verdict as Markdown here");
  sub->callback([a, &status] { status = run_gate(*a); });
}

void add_merge_command(CLI::App &app, int &status) {
  auto a = std::make_shared<MergeArgs>();
  CLI::App *sub = app.add_subcommand(
      "merge", "join the reports of a run's shards (--shard i/n) into the whole run's report");
  sub->add_option("files", a->files, "the shards' result files, every i of 1..n once")->required();
  sub->add_option("--out", a->out, "the merged result file")->required();
  add_summary_option(sub, a->summary);
  sub->callback([a, &status] { status = run_merge(*a); });
}

} // namespace ruleproof::cli
