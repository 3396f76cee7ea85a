// ruleproof verify: every property of property_tests/checks (the same checks the Catch
// suite runs) for every rule x scalar, on cases drawn from the same RapidCheck generators
// with seeds derived from --seed, shrunk to a smallest counterexample when one fails; and
// sympow's rows (every variant and power, every property: its three forms).
#include "verify.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <exception>
#include <initializer_list>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include <fmt/core.h>
#include <nlohmann/json.hpp>
#include <rapidcheck.h>

#include "error_profiles.hpp"
#include "gpu/device.hpp"
#include "option_checks.hpp"
#include "property_tests/checks/generators.hpp"
#include "property_tests/checks/run.hpp"
#include "reference/core/compare.hpp"
#include "reference/core/seeds.hpp"
#include "report_output.hpp"
#include "reporting/progress.hpp"
#include "reporting/result.hpp"

namespace ruleproof::cli {

namespace {

using namespace ruleproof::checks;

struct VerifyOptions {
  std::vector<std::string> rules, properties, scalars;
  std::uint64_t seed = 1;
  std::size_t cases = 50;
  std::string out = "reports/out/verify.json";
  std::string summary, shard;
  unsigned threads = std::max(1u, std::thread::hardware_concurrency()); // as claims, check-dump
  unsigned mpfr_digits = 50;
};

/// The seed of case i of property p on rule r: the same in every scalar, so the three
/// precisions see the same inputs.
std::uint64_t case_seed(std::uint64_t seed, Property p, const std::string &rule, std::size_t i) {
  return mix(seed ^ mix(hash_of(name_of(p)) ^ mix(hash_of(rule) + i)));
}

/// One row of the table: rule x scalar x property x form.
struct Row {
  std::string rule, scalar, property, form, against;
  std::size_t cases = 0, failures = 0, elements = 0;
  double worst_rel = 0, worst_ratio = 0;
  std::string worst_where, counterexample, counterexample_where;
  std::uint64_t failing_seed = 0;
  Measure worst;                ///< the measure of the worst case (its element, error, bound)
  std::uint64_t worst_seed = 0; ///< that case's seed
  bool holds() const { return failures == 0; }
  double digits() const { return digits_agreed(worst_rel); }
};

struct Job {
  RuleInfo rule;
  ScalarKind scalar;
  Property property;
  std::vector<Case> cases;
  std::vector<std::uint64_t> seeds;
  std::vector<Row> rows; // one per form, in the order the check reports them
  std::string error;
  double seconds = 0;
};

Report check_or_error(const Job &job, const Case &c) {
  return run_check(job.scalar, job.property, job.rule.name(), c);
}

void record(Job &job, const Report &r, std::size_t case_index) {
  for (std::size_t f = 0; f < r.measures.size(); ++f) {
    const Measure &m = r.measures[f];
    if (job.rows.size() <= f) {
      Row row;
      row.rule = job.rule.name(), row.scalar = name_of(job.scalar);
      row.property = name_of(job.property), row.form = m.form, row.against = m.against;
      job.rows.push_back(row);
    }
    Row &row = job.rows[f];
    ++row.cases;
    row.elements += m.elements;
    row.worst_rel = std::max(row.worst_rel, m.worst_rel);
    if (!m.holds() || m.worst_ratio > row.worst_ratio) {
      if (row.worst_ratio < m.worst_ratio || (!m.finite && row.worst.finite)) {
        row.worst_where = m.where;
        row.worst = m;
        row.worst_seed = job.seeds[case_index];
      }
      row.worst_ratio = m.finite ? std::max(row.worst_ratio, m.worst_ratio)
                                 : std::numeric_limits<double>::infinity();
    }
    if (!m.holds() && row.failures++ == 0)
      row.failing_seed = job.seeds[case_index];
  }
}

void run_job(Job &job) {
  const auto start = std::chrono::steady_clock::now();
  try {
    for (std::size_t i = 0; i < job.cases.size(); ++i)
      record(job, check_or_error(job, job.cases[i]), i);
  } catch (const std::exception &e) {
    job.error = e.what();
  }
  job.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// Greedy shrinking through the generator's own shrinks: keep the first smaller case that
/// still fails, until none does (or a budget of checks is spent).
std::pair<Case, std::string> shrink(const Job &job, std::uint64_t seed) {
  rc::Shrinkable<Case> current = gen::case_for(job.property, job.rule)(rc::Random(seed), 100);
  Report report = check_or_error(job, current.value());
  int budget = 400;
  for (bool progress = true; progress && budget > 0;) {
    progress = false;
    auto shrinks = current.shrinks();
    while (auto next = shrinks.next()) {
      if (--budget <= 0)
        break;
      Report r;
      try {
        r = check_or_error(job, next->value());
      } catch (const std::exception &) {
        continue;
      }
      if (!r.holds()) {
        current = *next, report = r, progress = true;
        break;
      }
    }
  }
  return {current.value(), report.summary()};
}

/// The command that replays one row: its rule, property and scalar, with the sweep's seed and
/// number of cases (a case's seed depends on those only).
std::string replay_command(const VerifyOptions &opt, const std::string &rule,
                           const std::string &property, const std::string &scalar) {
  std::string c = "ruleproof verify --rule " + rule + " --property " + property + " --scalar " +
                  scalar + " --seed " + std::to_string(opt.seed) + " --cases " +
                  std::to_string(opt.cases);
  if (scalar == "mpfr")
    c += " --mpfr-digits " + std::to_string(opt.mpfr_digits);
  return c;
}

reports::Result result_of(const VerifyOptions &opt, const Row &row) {
  reports::Result r;
  r.id = row.rule + "/" + row.scalar + "/" + row.property + "/" + row.form + "/" + row.against;
  r.kind = "property";
  r.rule = row.rule, r.scalar = row.scalar, r.property = row.property, r.output = row.form;
  r.verdict = row.holds() ? reports::Verdict::holds : reports::Verdict::fails;
  r.cases = row.cases, r.failures = row.failures;
  r.digits = row.digits();
  r.error_over_allowed = row.worst_ratio;
  if (!row.worst.tensor.empty()) {
    r.worst_error = row.worst.worst_error;
    r.allowed_error = row.worst.worst_bound;
    r.where = reports::where_in(row.worst.tensor, row.worst.index, row.worst_where);
  }
  r.replay.command = replay_command(opt, row.rule, row.property, row.scalar);
  r.replay.seed = row.holds() ? row.worst_seed : row.failing_seed;
  r.replay.case_description = row.counterexample;
  r.details = {{"against", row.against},
               {"elements", row.elements},
               {"worst_relative_error", row.worst_rel}};
  if (!row.holds())
    r.details["counterexample_result"] = row.counterexample_where;
  return r;
}

/// A job whose check threw: it fails, with the exception's message.
reports::Result error_result(const VerifyOptions &opt, const Job &j) {
  reports::Result r;
  r.rule = j.rule.name(), r.scalar = name_of(j.scalar), r.property = name_of(j.property);
  r.id = r.rule + "/" + r.scalar + "/" + r.property + "/error";
  r.kind = "property";
  r.output = "error";
  r.verdict = reports::Verdict::fails;
  r.cases = j.cases.size(), r.failures = j.cases.size();
  r.replay.command = replay_command(opt, r.rule, r.property, r.scalar);
  r.details = {{"error", j.error}};
  return r;
}

std::string fmt_number(double x) {
  if (std::isinf(x))
    return "inf";
  return fmt::format("{:.2e}", x);
}

int run_verify(const VerifyOptions &opt) {
  expect_report_writable(opt.out, opt.summary);
  // Which rules, properties, scalars.
  std::vector<RuleInfo> known = rule_infos();
  for (const RuleInfo &r : sympow_infos())
    known.push_back(r);
  std::vector<RuleInfo> rules;
  if (opt.rules.empty())
    rules = known;
  for (const std::string &name : opt.rules) {
    const auto it = std::find_if(known.begin(), known.end(),
                                 [&](const RuleInfo &r) { return r.name() == name; });
    if (it == known.end()) {
      std::string names;
      for (const RuleInfo &r : known)
        names += (names.empty() ? "" : ", ") + r.name();
      fmt::print(stderr, "ruleproof verify: unknown rule '{}'; known rules: {}\n", name, names);
      return 2;
    }
    rules.push_back(*it);
  }
  std::vector<Property> properties;
  for (Property p : all_properties)
    if (opt.properties.empty() ||
        std::find(opt.properties.begin(), opt.properties.end(), name_of(p)) != opt.properties.end())
      properties.push_back(p);
  for (const std::string &name : opt.properties)
    if (std::none_of(all_properties.begin(), all_properties.end(),
                     [&](Property p) { return name_of(p) == name; })) {
      fmt::print(stderr, "ruleproof verify: unknown property '{}'\n", name);
      return 2;
    }
  std::vector<ScalarKind> scalars;
  const std::vector<ScalarKind> compiled = compiled_scalars();
  const std::initializer_list<ScalarKind> scalar_kinds = {
      ScalarKind::double_, ScalarKind::long_double, ScalarKind::float128, ScalarKind::mpfr};
  for (ScalarKind s : scalar_kinds) {
    const bool asked =
        std::find(opt.scalars.begin(), opt.scalars.end(), name_of(s)) != opt.scalars.end();
    const bool by_default =
        std::find(all_scalars.begin(), all_scalars.end(), s) != all_scalars.end();
    const bool built = std::find(compiled.begin(), compiled.end(), s) != compiled.end();
    if (asked && !built) {
      fmt::print(stderr,
                 "ruleproof verify: --scalar {}: this build compiles the checks in double alone "
                 "(RULEPROOF_DOUBLE_ONLY, the sanitizer build)\n",
                 name_of(s));
      return 2;
    }
    if (asked || (opt.scalars.empty() && by_default && built))
      scalars.push_back(s);
  }
  for (const std::string &name : opt.scalars)
    if (std::none_of(scalar_kinds.begin(), scalar_kinds.end(),
                     [&](ScalarKind s) { return name_of(s) == name; })) {
      fmt::print(stderr,
                 "ruleproof verify: unknown scalar '{}' (double, long_double, float128, "
                 "mpfr)\n",
                 name);
      return 2;
    }
  set_check_mpfr_digits(opt.mpfr_digits);

  // Draw every case first, serially (the generators are not shared across threads). A shard
  // keeps every n-th job (rule x scalar x property) of the whole sweep's list.
  const auto shard = parse_shard(opt.shard);
  reports::Run run = reports::start_run("verify");
  run.seed = opt.seed;
  run.shard = shard;
  std::size_t job_index = 0;
  std::vector<Job> jobs;
  nlohmann::json not_applicable_pairs = nlohmann::json::array();
  for (Property p : properties)
    for (const RuleInfo &r : rules) {
      if (!applies(p, r)) {
        not_applicable_pairs.push_back(
            {{"rule", r.name()}, {"property", name_of(p)}, {"why", not_applicable(p, r)}});
        continue;
      }
      std::vector<Case> cases;
      std::vector<std::uint64_t> seeds;
      for (std::size_t i = 0; i < opt.cases; ++i) {
        seeds.push_back(case_seed(opt.seed, p, r.name(), i));
        cases.push_back(gen::case_for(p, r)(rc::Random(seeds.back()), 100).value());
      }
      for (ScalarKind s : scalars)
        if (!(s == ScalarKind::mpfr && r.name().rfind("sympow", 0) == 0)) // not instantiated
          if (in_shard(shard, job_index++))
            jobs.push_back({r, s, p, cases, seeds, {}, {}, 0});
    }

  fmt::print(stderr,
             "ruleproof verify: {} rules x {} properties x {} scalars, {} cases each, "
             "seed {}, {} thread(s){}\n",
             rules.size(), properties.size(), scalars.size(), opt.cases, opt.seed, opt.threads,
             shard ? fmt::format(", shard {}/{}: {} jobs", shard->first, shard->second, jobs.size())
                   : "");
  std::atomic<std::size_t> next{0};
  std::mutex print_lock;
  reports::Progress progress("ruleproof verify: jobs", jobs.size(),
                             reports::progress_wanted(stderr));
  const auto worker = [&] {
    for (std::size_t i; (i = next++) < jobs.size();) {
      run_job(jobs[i]);
      const Job &j = jobs[i];
      bool ok = j.error.empty();
      for (const Row &row : j.rows)
        ok = ok && row.holds();
      if (!ok) { // failures are printed always; the rest only as the progress line
        std::lock_guard<std::mutex> lock(print_lock);
        progress.finish();
        fmt::print(stderr, "  {} {} {}: {} ({:.1f} s)\n", j.rule.name(), name_of(j.scalar),
                   name_of(j.property), !j.error.empty() ? "ERROR " + j.error : "FAILS", j.seconds);
      }
      progress.advance();
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < std::max(1u, opt.threads); ++t)
    pool.emplace_back(worker);
  worker();
  for (auto &t : pool)
    t.join();
  progress.finish();

  // Shrink failures, serially.
  for (Job &j : jobs)
    for (Row &row : j.rows)
      if (!row.holds()) {
        fmt::print(stderr, "  shrinking {} {} {} {} ...\n", row.rule, row.scalar, row.property,
                   row.form);
        const auto [c, summary] = shrink(j, row.failing_seed);
        row.counterexample = describe(c);
        row.counterexample_where = summary;
      }

  // The table.
  bool all_hold = true;
  std::size_t width = 32;
  for (const RuleInfo &r : rules)
    width = std::max(width, r.name().size());
  fmt::print("{:<{}} {:<11} {:<67} {:<18} {:>5} {:>9} {:>9} {:>6}  {}\n", "rule", width, "scalar",
             "property", "form", "cases", "rel.err", "err/bnd", "digits", "verdict");
  for (const Job &j : jobs) {
    if (!j.error.empty()) {
      all_hold = false;
      fmt::print("{:<{}} {:<11} {:<67} error: {}\n", j.rule.name(), width, name_of(j.scalar),
                 name_of(j.property), j.error);
      run.results.push_back(error_result(opt, j));
      continue;
    }
    for (const Row &row : j.rows) {
      const std::string verdict = row.holds() ? "holds" : "FAILS";
      if (!row.holds())
        all_hold = false;
      fmt::print("{:<{}} {:<11} {:<67} {:<18} {:>5} {:>9} {:>9} {:>6.1f}  {}\n", row.rule, width,
                 row.scalar, row.property, row.form, row.cases, fmt_number(row.worst_rel),
                 fmt_number(row.worst_ratio), std::min(row.digits(), 99.0), verdict);
      if (!row.holds())
        fmt::print("    counterexample: {}\n    {}", row.counterexample, row.counterexample_where);
      run.results.push_back(result_of(opt, row));
    }
  }
  // GPU kernels are checked only where a Hopper GPU is present; say which, or why none.
  const gpu::DeviceInfo device = gpu::query_device();
  fmt::print("GPU: {}\n", device.description);
  run.machine.gpu = device.description;
  run.details = {{"cases", opt.cases},
                 {"mpfr_digits", opt.mpfr_digits},
                 {"not_applicable", not_applicable_pairs}};
  std::vector<std::string> rule_names;
  for (const RuleInfo &r : rules)
    rule_names.push_back(r.name());
  run.details.update(kernel_error_profiles(rule_names, opt.seed));
  std::map<std::string, std::vector<std::string>> by_reason; // one line per reason
  for (const auto &na : not_applicable_pairs)
    by_reason[na["why"].get<std::string>() + ": " + na["property"].get<std::string>()].push_back(
        na["rule"].get<std::string>());
  for (const auto &[reason, names] : by_reason) {
    std::string list;
    for (const std::string &n : names)
      list += (list.empty() ? "" : ", ") + n;
    fmt::print("does not apply ({}): {}\n", reason,
               names.size() <= 6 ? list
                                 : std::to_string(names.size()) + " rules (listed in the JSON)");
  }
  write_report(run, opt.out, opt.summary);
  fmt::print("{}\n", all_hold ? "every property holds" : "a property FAILS");
  return all_hold ? 0 : 1;
}

} // namespace

void add_verify_command(CLI::App &app, int &status) {
  auto opt = std::make_shared<VerifyOptions>();
  CLI::App *sub = app.add_subcommand(
      "verify", "check every property of every rule, form and scalar (exit 0: all hold)");
  sub->add_option("--rule", opt->rules, "rule to check (repeatable); default: every rule");
  sub->add_option("--property", opt->properties, "property to check (repeatable); default: all");
  sub->add_option("--scalar", opt->scalars,
                  "scalar type (repeatable: double, long_double, float128, mpfr); default: "
                  "double, long_double, float128");
  sub->add_option("--mpfr-digits", opt->mpfr_digits, "decimal digits of the mpfr scalar")
      ->check(CLI::Range(10u, 10000u))
      ->capture_default_str();
  sub->add_option("--seed", opt->seed, "seed of the sweep; the same seed replays it exactly");
  sub->add_option("--cases", opt->cases, "cases per rule, property and scalar")
      ->check(at_least_one);
  sub->add_option("--out", opt->out, "JSON report path");
  sub->add_option("--threads", opt->threads,
                  "worker threads (default: one a core; the report is the same on any count)")
      ->check(at_least_one);
  add_summary_option(sub, opt->summary);
  add_shard_option(sub, opt->shard, "jobs (rule x scalar x property)");
  sub->callback([opt, &status] { status = run_verify(*opt); });
}

} // namespace ruleproof::cli
