// The result format (reporting/result.hpp): every run written conforms to the schema and reads
// back as written, the schema validator refuses what breaks it, the summary says what fails,
// where, by how much and how to replay it; the gate finds each kind of regression and passes
// known failures; shards merge into the whole run; the progress line is drawn only on a
// terminal without CI.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <limits>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "reporting/gate.hpp"
#include "reporting/json_schema.hpp"
#include "reporting/progress.hpp"
#include "reporting/result.hpp"

using namespace ruleproof::reports;

namespace {

const double nan_ = std::numeric_limits<double>::quiet_NaN();
const double inf_ = std::numeric_limits<double>::infinity();

nlohmann::json schema() {
  std::ifstream in(RULEPROOF_RESULT_SCHEMA);
  return nlohmann::json::parse(in);
}

Result result(const std::string &id, Verdict v, double error, double allowed) {
  Result r;
  r.id = id;
  r.kind = "property";
  r.rule = "gla";
  r.scalar = "double";
  r.property = "forms_agree";
  r.output = "chunk";
  r.verdict = v;
  r.worst_error = error;
  r.allowed_error = allowed;
  r.error_over_allowed = error / allowed;
  r.digits = -std::log10(error);
  r.cases = 3;
  r.failures = v == Verdict::fails ? 1 : 0;
  r.replay = {42, "T=9", "ruleproof verify --rule gla --seed 1"};
  r.where = where_in("o", {0, 5, 1, 3}, "o[..] = 1 vs 2");
  return r;
}

Run run_of(std::vector<Result> results) {
  Run run;
  run.command = "verify";
  run.command_line = "ruleproof verify --cases 3";
  run.seed = 1;
  run.tool_version = "0.1.0";
  run.machine = {"host", "Linux", "", 2};
  run.started = "2026-01-01T00:00:00Z";
  run.finished = "2026-01-01T00:00:01Z";
  run.seconds = 1;
  run.results = std::move(results);
  return run;
}

std::string temp_path(const std::string &name) {
  return (std::filesystem::temp_directory_path() / ("ruleproof_reports_" + name)).string();
}

} // namespace

TEST_CASE("a written run conforms to the schema and reads back as written", "[format]") {
  Run run =
      run_of({result("a", Verdict::holds, 1e-16, 1e-15), result("b", Verdict::fails, nan_, 1e-15),
              result("c", Verdict::undecided, 1e-16, inf_)});
  run.results[2].where.reset();
  run.results[2].replay.seed.reset();
  run.shard = std::pair<std::size_t, std::size_t>{2, 3};
  const nlohmann::json j = to_json(run);
  const auto problems = schema_violations(schema(), j);
  INFO(nlohmann::json(problems).dump(1));
  CHECK(problems.empty());
  CHECK(j["verdict"] == "fails");
  CHECK(j["counts"]["fails"] == 1);
  CHECK(j["results"][1]["worst_error"] == "nan");
  const Run back = from_json(j, "test");
  CHECK(to_json(back) == j);
  REQUIRE(back.results[0].where);
  CHECK(back.results[0].where->time == 5u);
  CHECK(back.results[0].where->head == 1u);
  CHECK(std::isnan(*back.results[1].worst_error));
  CHECK(std::isinf(*back.results[2].allowed_error));
}

TEST_CASE("the schema validator refuses what breaks the format", "[format]") {
  const nlohmann::json good = to_json(run_of({result("a", Verdict::holds, 1e-16, 1e-15)}));
  REQUIRE(schema_violations(schema(), good).empty());
  const auto broken = [&](auto change) {
    nlohmann::json j = good;
    change(j);
    return !schema_violations(schema(), j).empty();
  };
  CHECK(broken([](nlohmann::json &j) { j["version"] = 2; }));
  CHECK(broken([](nlohmann::json &j) { j["format"] = "other"; }));
  CHECK(broken([](nlohmann::json &j) { j.erase("seed"); }));
  CHECK(broken([](nlohmann::json &j) { j["surprise"] = 1; }));
  CHECK(broken([](nlohmann::json &j) { j["results"][0]["verdict"] = "maybe"; }));
  CHECK(broken([](nlohmann::json &j) { j["results"][0]["worst_error"] = "huge"; }));
  CHECK(broken([](nlohmann::json &j) { j["results"][0]["cases"] = -1; }));
  CHECK(broken([](nlohmann::json &j) { j["results"][0]["where"]["index"] = {1.5}; }));
  CHECK(broken([](nlohmann::json &j) { j["results"][0]["replay"].erase("command"); }));
  CHECK(broken([](nlohmann::json &j) { j["shard"] = {{"index", 0}, {"count", 2}}; }));
  CHECK_THROWS_AS(schema_violations({{"pattern", "x"}}, good), std::invalid_argument);
  CHECK_THROWS_AS(schema_violations({{"$ref", "#/$defs/none"}}, good), std::invalid_argument);
}

TEST_CASE("reading refuses a missing file, corrupt JSON and another version", "[format]") {
  CHECK_THROWS_WITH(read_run(temp_path("no_such_file.json")), Catch::Contains("no such file"));
  const std::string corrupt = temp_path("corrupt.json");
  std::ofstream(corrupt) << "{\"format\": \"ruleproof-result\", ";
  CHECK_THROWS_WITH(read_run(corrupt), Catch::Contains("not valid JSON"));
  nlohmann::json j = to_json(run_of({}));
  j["version"] = 7;
  CHECK_THROWS_WITH(from_json(j, "f.json"), Catch::Contains("version 7"));
  j = to_json(run_of({result("a", Verdict::holds, 1e-16, 1e-15)}));
  j["results"][0]["cases"] = "three";
  CHECK_THROWS_WITH(from_json(j, "f.json"), Catch::Contains("results[0].cases"));
  std::filesystem::remove(corrupt);
}

TEST_CASE("the summary says what fails, where, by how much and how to replay it", "[summary]") {
  Run run = run_of({result("gla/double/forms_agree/chunk", Verdict::fails, 3e-12, 1e-15),
                    result("kda/double/forms_agree/chunk", Verdict::holds, 1e-16, 1e-15),
                    result("kda/double/halves/chunk", Verdict::fails, nan_, 1e-15)});
  const std::string md = summary_markdown(run);
  CHECK_THAT(md, Catch::Contains("2 of 3 results fail"));
  CHECK_THAT(md, Catch::Contains("`o[0, 5, 1, 3]` (batch 0, t = 5, head 1)"));
  CHECK_THAT(md, Catch::Contains("3e-12 | 1e-15 | 3e+03"));
  CHECK_THAT(md, Catch::Contains("**NaN**"));
  CHECK_THAT(md, Catch::Contains("`ruleproof verify --rule gla --seed 1` (case seed 42: T=9)"));
  CHECK_THAT(md, Catch::Contains("Holding results nearest their limit"));
  // NaN first: the worst is listed first.
  CHECK(md.find("**NaN**") < md.find("3e+03"));
  CHECK(summary_path_for("out/verify.json") == "out/verify.summary.md");
  Result claim = result("003.step2", Verdict::fails, 0.5, 0);
  claim.kind = "claim", claim.rule = "", claim.scalar = "exact rational";
  claim.property = "003.txt, step 2";
  CHECK_THAT(summary_markdown(run_of({claim})), Catch::Contains("| `003.step2` exact rational"));
}

TEST_CASE("the command line recorded leaves out output paths and the shard", "[format]") {
  const char *argv[] = {"/x/build/ruleproof",
                        "verify",
                        "--out",
                        "a.json",
                        "--summary=s.md",
                        "--shard",
                        "1/2",
                        "--rule",
                        "gla",
                        "--note",
                        "it's"};
  set_invocation(11, argv);
  CHECK(invocation() == "ruleproof verify --rule gla --note 'it'\\''s'");
}

TEST_CASE("the gate fails on new failures, NaN, grown errors, missing results", "[gate]") {
  const Run baseline = run_of(
      {result("a", Verdict::holds, 1e-16, 1e-15), result("b", Verdict::holds, 2e-16, 1e-15),
       result("c", Verdict::fails, 3e-12, 1e-15), result("d", Verdict::holds, 1e-16, 1e-15)});
  const GateOptions o;
  SECTION("the same run passes") {
    const GateReport g = compare_with_baseline(baseline, baseline, o);
    CHECK(g.passes());
    CHECK(g.items.size() == 4);
    CHECK_THAT(junit_xml(g, baseline), Catch::Contains("failures=\"0\" skipped=\"1\""));
  }
  SECTION("each regression") {
    Run now = baseline;
    now.results[0] = result("a", Verdict::fails, 2e-15, 1e-15); // new failure
    now.results[1] = result("b", Verdict::holds, 9e-16, 1e-15); // 4.5 times: grew
    now.results[2] = result("c", Verdict::fails, nan_, 1e-15);  // NaN, though it failed before
    now.results.pop_back();                                     // d missing
    now.results.push_back(result("e", Verdict::holds, 1e-16, 1e-15)); // new, holds
    const GateReport g = compare_with_baseline(baseline, now, o);
    CHECK(g.regressions() == 4);
    const auto finding = [&](const std::string &id) {
      for (const GateItem &i : g.items)
        if (i.id == id)
          return i.finding;
      FAIL("no item " << id);
      return Finding::unchanged;
    };
    CHECK(finding("a") == Finding::new_failure);
    CHECK(finding("b") == Finding::grew);
    CHECK(finding("c") == Finding::not_finite);
    CHECK(finding("d") == Finding::missing);
    CHECK(finding("e") == Finding::new_result);
    const std::string xml = junit_xml(g, now);
    CHECK_THAT(xml, Catch::Contains("tests=\"5\" failures=\"4\""));
    CHECK_THAT(xml, Catch::Contains("<failure type=\"new failure\""));
    CHECK_THAT(gate_markdown(g, now, "base.json"), Catch::Contains("4 regression(s)"));
  }
  SECTION("growth within the factor, or far below the allowance, passes") {
    Run now = baseline;
    now.results[1] = result("b", Verdict::holds, 3.9e-16, 1e-15); // 1.95 times
    now.results[3] = result("d", Verdict::holds, 9e-16, 1e-15);   // 0.1 to 0.9: grew
    CHECK(compare_with_baseline(baseline, now, o).regressions() == 1);
    GateOptions loose;
    loose.factor = 10;
    CHECK(compare_with_baseline(baseline, now, loose).passes());
    Run tiny = baseline;
    tiny.results[0].error_over_allowed = 0.0001;
    Run tiny_now = tiny;
    tiny_now.results[0].error_over_allowed = 0.009; // 90 times, but below min_ratio's 2 times
    CHECK(compare_with_baseline(tiny, tiny_now, o).passes());
  }
  SECTION("runs that cannot be compared") {
    Run other = baseline;
    other.command = "claims";
    CHECK_THROWS_AS(compare_with_baseline(baseline, other, o), ReportError);
    Run shard = baseline;
    shard.shard = std::pair<std::size_t, std::size_t>{1, 2};
    CHECK_THROWS_WITH(compare_with_baseline(baseline, shard, o), Catch::Contains("merge"));
  }
}

TEST_CASE("shards merge into the whole run, and only the n shards of one run do", "[merge]") {
  const Run whole =
      run_of({result("a", Verdict::holds, 1e-16, 1e-15), result("b", Verdict::fails, 3e-12, 1e-15),
              result("c", Verdict::holds, 1e-16, 1e-15)});
  Run s1 = whole, s2 = whole;
  s1.shard = std::pair<std::size_t, std::size_t>{1, 2};
  s2.shard = std::pair<std::size_t, std::size_t>{2, 2};
  s1.results = {whole.results[0], whole.results[2]};
  s2.results = {whole.results[1]};
  s2.seconds = 3;
  Run merged = merge_shards({s2, s1}, {"2.json", "1.json"});
  std::sort(merged.results.begin(), merged.results.end(),
            [](const Result &a, const Result &b) { return a.id < b.id; });
  nlohmann::json a = to_json(merged), b = to_json(whole);
  for (const std::string &f : timing_fields)
    a.erase(f), b.erase(f);
  CHECK(a == b);
  CHECK_THROWS_WITH(merge_shards({s1}, {"1.json"}), Catch::Contains("shard 2/2 is missing"));
  CHECK_THROWS_WITH(merge_shards({s1, s1}, {"1.json", "1b.json"}), Catch::Contains("twice"));
  Run other_seed = s2;
  other_seed.seed = 5;
  CHECK_THROWS_WITH(merge_shards({s1, other_seed}, {"1.json", "2.json"}), Catch::Contains("seed"));
  CHECK_THROWS_WITH(merge_shards({whole}, {"w.json"}), Catch::Contains("not a shard"));
}

TEST_CASE("progress: cases done and time left, drawn only on a terminal without CI", "[progress]") {
  CHECK(Progress::line("verify", 25, 100, 10) == "verify: 25/100 (25%), 10 s, about 30 s left");
  CHECK(Progress::line("verify", 100, 100, 130) == "verify: 100/100 (100%), 2 min 10 s");
  CHECK(duration_words(3725) == "1 h 02 min");

  std::FILE *file = std::tmpfile();
  REQUIRE(file);
  CHECK_FALSE(progress_wanted(file)); // a file is no terminal
  {
    Progress quiet("q", 3, false, file, 0);
    quiet.advance(3);
  }
  CHECK(std::ftell(file) == 0);
  {
    Progress shown("cases", 4, true, file, 0);
    shown.advance();
    shown.advance(3);
  }
  std::rewind(file);
  std::string drawn(256, '\0');
  drawn.resize(std::fread(drawn.data(), 1, drawn.size(), file));
  std::fclose(file);
  CHECK_THAT(drawn, Catch::Contains("\rcases: 1/4 (25%)"));
  CHECK_THAT(drawn, Catch::Contains("left"));
  CHECK_THAT(drawn, Catch::Contains("\rcases: 4/4 (100%)"));

  // A pseudo-terminal is a terminal: drawn, unless CI is set.
  const int master = posix_openpt(O_RDWR | O_NOCTTY);
  REQUIRE(master >= 0);
  REQUIRE(grantpt(master) == 0);
  REQUIRE(unlockpt(master) == 0);
  std::FILE *tty = std::fopen(ptsname(master), "w");
  REQUIRE(tty);
  const char *ci = std::getenv("CI");
  const std::string saved = ci ? ci : "";
  unsetenv("CI");
  CHECK(progress_wanted(tty));
  setenv("CI", "true", 1);
  CHECK_FALSE(progress_wanted(tty));
  if (ci)
    setenv("CI", saved.c_str(), 1);
  else
    unsetenv("CI");
  std::fclose(tty);
  close(master);
}
