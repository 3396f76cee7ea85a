// ruleproof html (html.hpp).
#include "html.hpp"

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "exit_codes.hpp"
#include "reporting/html.hpp"
#include "reporting/result.hpp"

namespace ruleproof::cli {

namespace {

struct HtmlArgs {
  std::vector<std::string> files;
  std::string out = "reports/out/report.html";
};

int write_page(const HtmlArgs &a) {
  std::vector<reports::Run> runs;
  std::vector<std::string> sources;
  for (const std::string &file : a.files) { // every file read before the page is written
    runs.push_back(reports::read_run(file));
    sources.push_back(std::filesystem::path(file).filename().string());
  }
  reports::write_html(runs, sources, a.out);
  fmt::print(stderr, "ruleproof html: wrote {} ({} run{})\n", a.out, runs.size(),
             runs.size() == 1 ? "" : "s");
  return ok;
}

} // namespace

void add_html_command(CLI::App &app, int &status) {
  auto args = std::make_shared<HtmlArgs>();
  CLI::App *cmd = app.add_subcommand(
      "html", "one self-contained HTML page of result files: plots of the errors along the "
              "sequence, against T and against the emulated twin; every result, filtered");
  cmd->add_option("files", args->files, "result files (verify.json, claims.json, ...)")->required();
  cmd->add_option("--out", args->out, "the page")->capture_default_str();
  cmd->callback([args, &status] { status = write_page(*args); });
}

} // namespace ruleproof::cli
