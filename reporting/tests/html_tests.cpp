// The error profiles (reporting/profile.hpp) place an error at its time step, chunk and head and
// let no NaN hide; the HTML page (reporting/html.hpp) embeds its runs so that no text in them
// can end the script holding them, and refers to nothing outside itself. That the page
// renders in a browser is cli/tests/html_report_in_browser.cmake's test.
#include <cmath>
#include <fstream>
#include <limits>
#include <string>

#include <catch2/catch.hpp>

#include "reference/core/tensor.hpp"
#include "reporting/html.hpp"
#include "reporting/json_schema.hpp"
#include "reporting/profile.hpp"

using namespace ruleproof;
using namespace ruleproof::reports;

TEST_CASE("an error profile places an error at its time step, chunk and head", "[profile]") {
  const Shape shape{2, 5, 3, 4}; // B, T, H, V
  Tensor<double> truth(shape, 1.0), computed(shape, 1.0);
  computed(1, 3, 2, 0) = 1.5;  // batch 1, t = 3, head 2
  computed(0, 0, 0, 3) = 1.25; // t = 0, head 0
  const ErrorProfile p = error_profile(computed, truth, 2);
  REQUIRE(p.time.size() == 3);
  REQUIRE(p.time[2].size() == 5);
  REQUIRE(p.chunk[2].size() == 3); // chunks [0, 2), [2, 4), [4, 5)
  CHECK(p.time[2][3] == 0.5);
  CHECK(p.time[0][0] == 0.25);
  CHECK(p.time[1][3] == 0);
  CHECK(p.chunk[2][1] == 0.5);
  CHECK(p.chunk[2][0] == 0);
  CHECK(p.chunk[0][0] == 0.25);
  CHECK(p.truth_max == 1);
}

TEST_CASE("a NaN in the computed output makes its entries NaN, not a smaller maximum",
          "[profile]") {
  Tensor<float> computed({1, 4, 1, 2}, 0.0f);
  const Tensor<double> truth({1, 4, 1, 2}, 0.0);
  computed(0, 1, 0, 1) = std::numeric_limits<float>::quiet_NaN();
  computed(0, 1, 0, 0) = 3.0f;
  const ErrorProfile p = error_profile(computed, truth, 2);
  CHECK(std::isnan(p.time[0][1]));
  CHECK(std::isnan(p.chunk[0][0]));
  CHECK(p.chunk[0][1] == 0);
  CHECK(to_json(p)["time"][0][1] == "nan");
}

TEST_CASE("an error profile refuses tensors of two shapes", "[profile]") {
  const Tensor<double> a({1, 4, 1, 2}), b({1, 4, 2, 2});
  CHECK_THROWS_AS(error_profile(a, b, 2), std::invalid_argument);
  CHECK_THROWS_AS(error_profile(a, a, 0), std::invalid_argument);
}

TEST_CASE("profiles and growths in a run's details conform to the schema, and broken ones do not",
          "[profile]") {
  std::ifstream in(RULEPROOF_RESULT_SCHEMA);
  const nlohmann::json schema = nlohmann::json::parse(in);
  Tensor<double> truth({1, 3, 2, 2}, 1.0), computed = truth;
  computed(0, 2, 1, 0) = std::numeric_limits<double>::infinity();
  ErrorProfile p = error_profile(computed, truth, 2);
  p.rule = "gla", p.output = "o", p.compared = "twin vs truth", p.scalar = "bf16",
  p.case_text = "T=3";
  const ErrorGrowth g{"gla",  "o",   "twin vs truth",
                      "bf16", "H=1", {{64, 1e-3, 2.0}, {128, 2e-3, 2.5}}};
  Run run;
  run.command = "verify";
  run.details = {{"profiles", {to_json(p)}}, {"growth", {to_json(g)}}};
  const nlohmann::json good = to_json(run);
  const auto problems = schema_violations(schema, good);
  INFO(nlohmann::json(problems).dump(1));
  CHECK(problems.empty());
  const auto broken = [&](auto change) {
    nlohmann::json j = good;
    change(j["details"]);
    return !schema_violations(schema, j).empty();
  };
  CHECK(broken([](nlohmann::json &d) { d["profiles"][0]["time"][0][1] = "large"; }));
  CHECK(broken([](nlohmann::json &d) { d["profiles"][0].erase("chunk"); }));
  CHECK(broken([](nlohmann::json &d) { d["profiles"][0]["chunk_size"] = 0; }));
  CHECK(broken([](nlohmann::json &d) { d["growth"][0]["points"][0].erase("T"); }));
  CHECK(broken([](nlohmann::json &d) { d["growth"] = {1}; }));
}

namespace {

Run run_saying(const std::string &text) {
  Run run;
  run.command = "verify";
  Result r;
  r.id = "gla/double/p/chunk/recurrent", r.kind = "property", r.rule = "gla";
  r.replay.command = text;
  run.results.push_back(r);
  return run;
}

} // namespace

TEST_CASE("the page embeds its runs so that no text in them ends the script", "[html]") {
  const std::string page =
      html_report({run_saying("</script><script>alert(1)</script><!--")}, {"a <b>.json"});
  const std::size_t data = page.find("id=\"ruleproof-data\">");
  REQUIRE(data != std::string::npos);
  const std::size_t end = page.find("</script>", data);
  const std::string embedded = page.substr(data, end - data);
  CHECK(embedded.find("\\u003c/script>\\u003cscript>alert(1)") != std::string::npos);
  CHECK(embedded.find("<!--") == std::string::npos);
  CHECK(page.find("<p class=\"sources\">a &lt;b&gt;.json</p>") != std::string::npos);
}

TEST_CASE("the page refers to nothing outside itself", "[html]") {
  const std::string page = html_report({run_saying("ruleproof verify")}, {"verify.json"});
  for (const char *fetches :
       {"src=", "href=", "@import", "fetch(", "XMLHttpRequest", "<link", "<iframe", "<img"})
    CHECK(page.find(fetches) == std::string::npos);
  // url() only of an element of the page (the plots' clip paths).
  for (std::size_t at = page.find("url("); at != std::string::npos; at = page.find("url(", at + 1))
    CHECK(page.compare(at, 5, "url(#") == 0);
  // The one address in it is the SVG namespace's name, which nothing fetches.
  const std::string svg_ns = "http://www.w3.org/2000/svg";
  for (std::size_t at = page.find("http"); at != std::string::npos; at = page.find("http", at + 1))
    CHECK(page.compare(at, svg_ns.size(), svg_ns) == 0);
}

TEST_CASE("the page's default path is the JSON file's, ending .html", "[html]") {
  CHECK(html_path_for("reports/out/verify.json") == "reports/out/verify.html");
  CHECK(html_path_for("x/claims") == "x/claims.html");
}
