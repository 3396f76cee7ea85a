// ruleproof claims: the claims engine of proofs/ over the claims of the five seed notes.
// A verdict that a note's equation fails is a finding, not an error: the exit status is 1
// only when the registry itself is wrong (a correction that does not hold, a quote that is
// not verbatim, a check that cannot be evaluated).
#include "claims.hpp"

#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <thread>

#include <fmt/core.h>

#include "exit_codes.hpp"
#include "option_checks.hpp"
#include "proofs/claims/claims.hpp"
#include "proofs/coverage.hpp"
#include "proofs/report.hpp"
#include "reference/core/compare.hpp"
#include "reference/core/inputs.hpp"
#include "report_output.hpp"
#include "reporting/atomic_write.hpp"
#include "reporting/progress.hpp"

namespace ruleproof::cli {

namespace {

struct ClaimsOptions {
  proofs::EngineOptions engine;
  std::vector<std::string> ids, notes;
  std::string seeds = RULEPROOF_SEEDS_DIR;
  std::string out = "reports/out";
  std::string summary, shard;
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
};

/// The claims asked for: every claim, or those named by --claim, or those of the notes
/// named by --note (a file name or its first characters, as "003").
std::vector<const proofs::Claim *> select(const std::vector<proofs::Claim> &all,
                                          const ClaimsOptions &o) {
  std::vector<const proofs::Claim *> chosen;
  for (const std::string &id : o.ids) {
    auto it = std::find_if(all.begin(), all.end(), [&](const auto &c) { return c.id == id; });
    if (it == all.end())
      throw InputError("--claim", "no claim '" + id + "'");
  }
  for (const std::string &note : o.notes)
    if (note.empty() || std::none_of(all.begin(), all.end(), [&](const auto &c) {
          return c.source.file.rfind(note, 0) == 0;
        }))
      throw InputError("--note", "no claims of a note '" + note + "'");
  for (const proofs::Claim &c : all) {
    const bool by_id = std::find(o.ids.begin(), o.ids.end(), c.id) != o.ids.end();
    const bool by_note = std::any_of(o.notes.begin(), o.notes.end(),
                                     [&](const auto &n) { return c.source.file.rfind(n, 0) == 0; });
    if ((o.ids.empty() && o.notes.empty()) || by_id || by_note)
      chosen.push_back(&c);
  }
  return chosen;
}

/// One claim in the result format. `as_json`: the claim as proofs::to_json writes it (its
/// source, quote, statement and every reading), kept as the result's details.
reports::Result result_of(const proofs::ClaimResult &cr, const ClaimsOptions &o,
                          const nlohmann::json &as_json) {
  const proofs::Claim &c = *cr.claim;
  reports::Result r;
  r.id = c.id;
  r.kind = "claim";
  r.property = c.source.file + (c.source.section.empty() ? "" : ", " + c.source.section) +
               (c.source.equation.empty() ? "" : ", " + c.source.equation);
  r.verdict = cr.verdict == proofs::Verdict::holds   ? reports::Verdict::holds
              : cr.verdict == proofs::Verdict::fails ? reports::Verdict::fails
                                                     : reports::Verdict::ambiguous;
  r.cases = static_cast<std::size_t>(o.engine.points);
  r.failures = cr.verdict == proofs::Verdict::fails ? 1 : 0;
  double error = 0;
  for (const proofs::ReadingResult &x : cr.readings)
    error = std::max(error, x.max_rel_error);
  r.worst_error = error;
  r.digits = digits_agreed(error);
  const proofs::ReadingResult *shown = proofs::shown_reading(cr);
  r.replay.seed = proofs::claim_seed(c.id, o.engine.seed);
  if (shown) {
    r.scalar = shown->method;
    r.output = cr.readings.size() > 1 ? shown->name : "";
    if (shown->method == "exact rational") {
      r.allowed_error = 0.0; // exact: equal or not
    } else if (shown->threshold > 0) {
      r.allowed_error = shown->threshold;
      r.error_over_allowed = shown->max_rel_error / shown->threshold;
    }
    if (shown->counterexample) {
      const proofs::Counterexample &ce = *shown->counterexample;
      r.replay.seed = ce.seed;
      r.replay.case_description =
          fmt::format("T={} K={} V={} C={}", ce.sizes.T, ce.sizes.K, ce.sizes.V, ce.sizes.C) +
          (ce.note.empty() ? "" : " (" + ce.note + ")");
    }
  }
  r.replay.command = fmt::format("ruleproof claims --claim {} --seed {} --points {} "
                                 "--mpfr-digits {}",
                                 c.id, o.engine.seed, o.engine.points, o.engine.mpfr_digits);
  r.details = as_json;
  if (!cr.problem.empty())
    r.details["problem"] = cr.problem;
  return r;
}

int run_claims(const ClaimsOptions &o) {
  expect_writable("--out", o.out, true);
  if (!o.summary.empty())
    expect_writable("--summary", o.summary);
  const std::vector<proofs::Claim> all = proofs::notes::all_claims();
  const std::vector<const proofs::Claim *> every = select(all, o);
  const auto shard = parse_shard(o.shard);
  reports::Run run = reports::start_run("claims");
  run.seed = o.engine.seed;
  run.shard = shard;
  std::vector<const proofs::Claim *> chosen; // a shard decides every n-th claim
  for (std::size_t k = 0; k < every.size(); ++k)
    if (in_shard(shard, k))
      chosen.push_back(every[k]);
  const bool have_notes = std::filesystem::is_directory(o.seeds);
  if (!have_notes)
    fmt::print(stderr, "ruleproof claims: no seed notes at {}: quotes not checked (--seeds)\n",
               o.seeds);
  std::vector<std::string> problems = proofs::registry_problems(every, all, o.seeds, have_notes);
  std::vector<const proofs::Claim *> registry; // coverage is the whole registry's
  for (const proofs::Claim &c : all)
    registry.push_back(&c);
  const std::vector<proofs::NoteCoverage> coverage =
      have_notes ? proofs::coverage_of_notes(registry, proofs::notes::no_claim_needed(), o.seeds)
                 : std::vector<proofs::NoteCoverage>{};
  for (const std::string &p : proofs::coverage_problems(coverage))
    problems.push_back(p);
  fmt::print(stderr, "ruleproof claims: deciding {} claims on {} threads (seed {})\n",
             chosen.size(), o.threads, o.engine.seed);
  reports::Progress progress("ruleproof claims: decided", chosen.size(),
                             reports::progress_wanted(stderr));
  const auto results = proofs::decide_all(chosen, o.engine, o.threads,
                                          [&](std::size_t, std::size_t) { progress.advance(); });
  progress.finish();
  std::cout << proofs::table(results);
  for (const proofs::NoteCoverage &n : coverage)
    fmt::print("{}: {} displayed equations, {} neither covered by a claim nor given a reason\n",
               n.file, n.rows.size(), n.uncovered().size());
  for (const std::string &p : problems)
    fmt::print("registry problem: {}\n", p);
  const std::filesystem::path out(o.out);
  const nlohmann::json as_json = proofs::to_json(results, o.engine);
  for (std::size_t i = 0; i < results.size(); ++i)
    run.results.push_back(result_of(results[i], o, as_json["claims"][i]));
  run.details = {{"points", o.engine.points},
                 {"mpfr_digits", o.engine.mpfr_digits},
                 {"registry_problems", problems}};
  reports::write_file_atomically(
      out / "claims.md",
      proofs::to_markdown(results, o.engine) +
          (have_notes ? proofs::coverage_markdown(coverage) : proofs::coverage_not_computed));
  write_report(run, (out / "claims.json").string(), o.summary);
  fmt::print("wrote {} and {}\n", (out / "claims.json").string(), (out / "claims.md").string());
  const bool sound =
      problems.empty() &&
      std::all_of(results.begin(), results.end(), [](const auto &r) { return r.problem.empty(); });
  return sound ? ok : check_failed;
}

} // namespace

void add_claims_command(CLI::App &app, int &status) {
  auto opt = std::make_shared<ClaimsOptions>();
  CLI::App *sub = app.add_subcommand(
      "claims", "decide every equation of the seed notes: holds, fails or ambiguous (exit 0: "
                "every claim decided and every correction holds)");
  sub->add_option("--claim", opt->ids, "claim id to decide (repeatable); default: every claim");
  sub->add_option("--note", opt->notes,
                  "decide the claims of one note: its file name or first characters, as 003 "
                  "(repeatable)");
  sub->add_option("--seed", opt->engine.seed, "seed of the random draws; the same seed replays")
      ->capture_default_str();
  sub->add_option("--points", opt->engine.points, "random draws each reading must agree at")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  sub->add_option("--mpfr-digits", opt->engine.mpfr_digits,
                  "digits of the lower of the two MPFR precisions (the other is twice)")
      ->check(CLI::Range(20u, 2000u))
      ->capture_default_str();
  sub->add_option("--seeds", opt->seeds, "folder of the seed notes, for checking the quotes")
      ->capture_default_str();
  sub->add_option("--out", opt->out,
                  "folder for claims.json (the result format), claims.summary.md and claims.md")
      ->capture_default_str();
  sub->add_option("--threads", opt->threads, "worker threads")->check(at_least_one);
  add_summary_option(sub, opt->summary);
  add_shard_option(sub, opt->shard, "claims");
  sub->callback([opt, &status] { status = run_claims(*opt); });
}

} // namespace ruleproof::cli
