// ruleproof claims: the claims engine of proofs/ over the claims of the five seed notes.
// A verdict that a note's equation fails is a finding, not an error: the exit status is 1
// only when the registry itself is wrong (a correction that does not hold, a quote that is
// not verbatim, a check that cannot be evaluated).
#include "claims.hpp"

#include <filesystem>
#include <iostream>
#include <memory>
#include <thread>

#include <fmt/core.h>

#include "exit_codes.hpp"
#include "proofs/claims/claims.hpp"
#include "proofs/report.hpp"
#include "reference/core/inputs.hpp"
#include "reports/atomic_write.hpp"

namespace ruleproof::cli {

namespace {

struct ClaimsOptions {
  proofs::EngineOptions engine;
  std::vector<std::string> ids, notes;
  std::string seeds = RULEPROOF_SEEDS_DIR;
  std::string out = "reports/out";
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

int run_claims(const ClaimsOptions &o) {
  const std::vector<proofs::Claim> all = proofs::notes::all_claims();
  const std::vector<const proofs::Claim *> chosen = select(all, o);
  const bool have_notes = std::filesystem::is_directory(o.seeds);
  if (!have_notes)
    fmt::print(stderr, "ruleproof claims: no seed notes at {}: quotes not checked (--seeds)\n",
               o.seeds);
  const std::vector<std::string> problems =
      proofs::registry_problems(chosen, all, o.seeds, have_notes);
  fmt::print(stderr, "ruleproof claims: deciding {} claims on {} threads (seed {})\n",
             chosen.size(), o.threads, o.engine.seed);
  const auto results =
      proofs::decide_all(chosen, o.engine, o.threads, [](std::size_t done, std::size_t total) {
        if (done % 10 == 0 || done == total)
          fmt::print(stderr, "  {}/{} decided\n", done, total);
      });
  std::cout << proofs::table(results);
  for (const std::string &p : problems)
    fmt::print("registry problem: {}\n", p);
  const std::filesystem::path out(o.out);
  reports::write_file_atomically(out / "claims.json", proofs::to_json(results, o.engine).dump(2));
  reports::write_file_atomically(out / "claims.md", proofs::to_markdown(results, o.engine));
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
  sub->add_option("--out", opt->out, "folder for claims.json and claims.md")->capture_default_str();
  sub->add_option("--threads", opt->threads, "worker threads")->check(CLI::PositiveNumber);
  sub->callback([opt, &status] { status = run_claims(*opt); });
}

} // namespace ruleproof::cli
