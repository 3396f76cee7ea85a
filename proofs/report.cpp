// ruleproof: the claims engine's reports (see report.hpp).
#include "report.hpp"

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/core.h>

namespace ruleproof::proofs {

namespace {

std::string read_file(const std::filesystem::path &p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string sizes_string(const Sizes &s) {
  return fmt::format("T={} K={} V={} C={}", s.T, s.K, s.V, s.C);
}

std::string error_string(double e) { return e == 0 ? "0" : fmt::format("{:.2g}", e); }

std::string counterexample_string(const ClaimResult &r) {
  const ReadingResult *x = shown_reading(r);
  if (!x || !x->counterexample)
    return "";
  const Counterexample &c = *x->counterexample;
  return sizes_string(c.sizes) + fmt::format(" seed={:#x}", c.seed) +
         (c.note.empty() ? "" : " (" + c.note + ")");
}

double max_error(const ClaimResult &r) {
  double e = 0;
  for (const ReadingResult &x : r.readings)
    e = std::max(e, x.max_rel_error);
  return e;
}

/// Counts per note, in the order the notes first appear.
struct NoteCounts {
  std::string file;
  int count[3] = {0, 0, 0}; ///< by Verdict: holds, fails, ambiguous
  int of(Verdict v) const { return count[static_cast<int>(v)]; }
  int total() const { return count[0] + count[1] + count[2]; }
  int problems = 0;
};
std::vector<NoteCounts> counts_of(const std::vector<ClaimResult> &results) {
  std::vector<NoteCounts> notes;
  for (const ClaimResult &r : results) {
    auto it = std::find_if(notes.begin(), notes.end(),
                           [&](const NoteCounts &n) { return n.file == r.claim->source.file; });
    if (it == notes.end())
      it = notes.insert(notes.end(), NoteCounts{r.claim->source.file});
    ++it->count[static_cast<int>(r.verdict)];
    it->problems += r.problem.empty() ? 0 : 1;
  }
  return notes;
}

std::string source_string(const Source &s) {
  return s.section + (s.equation.empty() ? "" : ", " + s.equation);
}

std::string method_string(const ReadingResult &x) {
  if (x.method == "exact rational" && x.verdict == Verdict::holds)
    return fmt::format("exact, P(false holds) <= {:.1e}", x.failure_bound);
  if (x.method == "exact rational")
    return "exact";
  return x.method;
}

/// Escapes | for a Markdown table cell.
std::string cell(std::string s) {
  std::string out;
  for (char ch : s)
    out += ch == '|' ? std::string("\\|") : std::string(1, ch);
  return out;
}

} // namespace

const ReadingResult *shown_reading(const ClaimResult &r) {
  for (const ReadingResult &x : r.readings)
    if (x.verdict == Verdict::fails)
      return &x;
  return r.readings.empty() ? nullptr : &r.readings.front();
}

std::string readings_summary(const ClaimResult &r) {
  if (r.verdict != Verdict::ambiguous)
    return "";
  const auto named = [&](Verdict v) {
    std::string names;
    for (const ReadingResult &x : r.readings)
      if (x.verdict == v)
        names += (names.empty() ? "\"" : ", \"") + x.name + "\"";
    return names;
  };
  return "holds read as " + named(Verdict::holds) + "; fails read as " + named(Verdict::fails);
}

std::vector<std::string> registry_problems(const std::vector<const Claim *> &claims,
                                           const std::vector<Claim> &all,
                                           const std::filesystem::path &seeds_dir,
                                           bool check_quotes) {
  std::vector<std::string> problems;
  std::set<std::string> ids;
  for (const Claim &c : all)
    if (!ids.insert(c.id).second)
      problems.push_back(c.id + ": the id is used twice");
  std::map<std::string, std::string> notes;
  for (const Claim *c : claims) {
    const auto n = std::count_if(c->quote.begin(), c->quote.end(), [](unsigned char ch) {
      return (ch & 0xC0) != 0x80; // characters, not UTF-8 continuation bytes
    });
    if (n < 20 || n > 200)
      problems.push_back(c->id + ": the quote has " + std::to_string(n) +
                         " characters, not 20 to 200");
    if (c->readings.empty())
      problems.push_back(c->id + ": no reading to check");
    if (!c->correction_of.empty() && !ids.count(c->correction_of))
      problems.push_back(c->id + ": corrects '" + c->correction_of + "', which is no claim");
    if (!check_quotes)
      continue;
    if (!notes.count(c->source.file)) {
      const auto path = seeds_dir / c->source.file;
      if (!std::filesystem::is_regular_file(path)) {
        problems.push_back(c->id + ": its note " + path.string() + " is missing");
        continue;
      }
      notes[c->source.file] = read_file(path);
    }
    const std::string &note = notes[c->source.file];
    int found = 0;
    for (std::size_t at = note.find(c->quote); at != std::string::npos && !c->quote.empty();
         at = note.find(c->quote, at + 1))
      ++found;
    if (found == 0)
      problems.push_back(c->id + ": the quote is not found verbatim in " + c->source.file);
    else if (c->occurrence < 1 || c->occurrence > found)
      problems.push_back(c->id + ": the quote is meant at its place " +
                         std::to_string(c->occurrence) + " in " + c->source.file +
                         ", which has it " + std::to_string(found) + " times");
  }
  return problems;
}

std::string table(const std::vector<ClaimResult> &results) {
  std::string out = fmt::format("{:<40} {:<10} {:>9}  {}\n", "claim", "verdict", "error",
                                "smallest counterexample");
  for (const ClaimResult &r : results) {
    out += fmt::format("{:<40} {:<10} {:>9}  {}\n", r.claim->id, to_string(r.verdict),
                       error_string(max_error(r)), counterexample_string(r));
    if (r.verdict == Verdict::ambiguous)
      out += "  " + readings_summary(r) + "\n";
    if (!r.problem.empty())
      out += "  problem: " + r.problem + "\n";
  }
  for (const NoteCounts &n : counts_of(results))
    out += fmt::format("{}: {} holds, {} fails, {} ambiguous{}\n", n.file, n.of(Verdict::holds),
                       n.of(Verdict::fails), n.of(Verdict::ambiguous),
                       n.problems ? fmt::format(", {} with a problem", n.problems) : "");
  return out;
}

nlohmann::json to_json(const std::vector<ClaimResult> &results, const EngineOptions &o) {
  nlohmann::json claims = nlohmann::json::array();
  for (const ClaimResult &r : results) {
    const Claim &c = *r.claim;
    nlohmann::json readings = nlohmann::json::array();
    for (const ReadingResult &x : r.readings) {
      nlohmann::json j{{"name", x.name},
                       {"statement", x.statement},
                       {"verdict", to_string(x.verdict)},
                       {"method", x.method},
                       {"max_rel_error", x.max_rel_error},
                       {"points", x.points}};
      if (x.method == "exact rational")
        j.update({{"degree", x.degree},
                  {"set_size", x.set_size},
                  {"schwartz_zippel_bound", x.failure_bound}});
      else
        j.update({{"why_not_exact", x.why_not_exact}, {"threshold", x.threshold}});
      if (x.counterexample) {
        const Counterexample &ce = *x.counterexample;
        j["counterexample"] = {{"T", ce.sizes.T}, {"K", ce.sizes.K}, {"V", ce.sizes.V},
                               {"C", ce.sizes.C}, {"seed", ce.seed}, {"max_rel_error", ce.error},
                               {"note", ce.note}};
      }
      readings.push_back(j);
    }
    const ReadingResult *shown = shown_reading(r);
    nlohmann::json j{
        {"id", c.id},
        {"source_file", c.source.file},
        {"section", c.source.section},
        {"equation", c.source.equation},
        {"quote", c.quote},
        {"statement", c.statement},
        {"verdict", to_string(r.verdict)},
        {"readings_summary", readings_summary(r)},
        {"max_rel_error", max_error(r)},
        {"counterexample", nullptr},
        {"readings", readings},
        {"correction_of", c.correction_of.empty() ? nullptr : nlohmann::json(c.correction_of)},
        {"method", shown ? shown->method : ""},
        {"seed", claim_seed(c.id, o.seed)},
        {"problem", r.problem}};
    if (shown && shown->counterexample)
      j["counterexample"] = readings[shown - r.readings.data()]["counterexample"];
    claims.push_back(j);
  }
  return {
      {"seed", o.seed}, {"points", o.points}, {"mpfr_digits", o.mpfr_digits}, {"claims", claims}};
}

std::string to_markdown(const std::vector<ClaimResult> &results, const EngineOptions &o) {
  std::string md = "# Verdicts on the seed notes\n\n";
  md += fmt::format(
      "Made by `ruleproof claims --seed {}`: every reading drawn at {} random points; exact "
      "rationals where both sides are rational in the inputs (the bound is Schwartz-Zippel's "
      "on a false identity agreeing at every point), MPFR at {} and {} digits otherwise. "
      "Regenerate with `build/cli/ruleproof claims --out reports/out` and copy "
      "`reports/out/claims.md` here; the test suite fails while the two differ.\n\n",
      o.seed, o.points, o.mpfr_digits, 2 * o.mpfr_digits);
  md += "| note | claims | holds | fails | ambiguous |\n|---|---|---|---|---|\n";
  for (const NoteCounts &n : counts_of(results))
    md += fmt::format("| {} | {} | {} | {} | {} |\n", n.file, n.total(), n.of(Verdict::holds),
                      n.of(Verdict::fails), n.of(Verdict::ambiguous));
  std::string note;
  for (const ClaimResult &r : results) {
    if (r.claim->source.file != note) {
      note = r.claim->source.file;
      md += "\n## " + note +
            "\n\n| id | section | verdict | method | error | smallest "
            "counterexample |\n|---|---|---|---|---|---|\n";
    }
    const ReadingResult *shown = shown_reading(r);
    md += fmt::format("| {} | {} | {} | {} | {} | {} |\n", r.claim->id,
                      cell(source_string(r.claim->source)), to_string(r.verdict),
                      shown ? cell(method_string(*shown)) : "", error_string(max_error(r)),
                      cell(counterexample_string(r)));
  }
  md += "\n## Claims that fail or are ambiguous\n";
  for (const ClaimResult &r : results) {
    if (r.verdict == Verdict::holds)
      continue;
    const Claim &c = *r.claim;
    md += fmt::format("\n### {} ({})\n\n{}, {}.\n\n> {}\n\nAs written: {}\n", c.id,
                      to_string(r.verdict), c.source.file, source_string(c.source), c.quote,
                      c.statement);
    if (r.verdict == Verdict::ambiguous)
      md += "\nThe readings disagree: it " + readings_summary(r) + ".\n";
    else if (r.readings.size() > 1)
      md += fmt::format("\nIt fails under each of its {} readings.\n", r.readings.size());
    for (const ReadingResult &x : r.readings) {
      md += fmt::format("\n- {}: **{}**, {}, largest relative difference {}", x.name,
                        to_string(x.verdict), method_string(x), error_string(x.max_rel_error));
      if (x.counterexample)
        md +=
            fmt::format("; smallest counterexample {} seed={:#x}, difference {}{}",
                        sizes_string(x.counterexample->sizes), x.counterexample->seed,
                        error_string(x.counterexample->error),
                        x.counterexample->note.empty() ? "" : " (" + x.counterexample->note + ")");
      md += r.readings.size() > 1 ? fmt::format(" ({})\n", x.statement) : "\n";
    }
    for (const ClaimResult &fix : results)
      if (fix.claim->correction_of == c.id)
        md += fmt::format("\nCorrected as `{}`: {} ({}).\n", fix.claim->id, fix.claim->statement,
                          to_string(fix.verdict));
  }
  return md;
}

} // namespace ruleproof::proofs
