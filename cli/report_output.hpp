// ruleproof: what every checking command shares about its report: the --summary and --shard
// options, and writing the run (the one result format of reporting/result.hpp) with its summary
// and its HTML page (reporting/html.hpp).
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "reference/core/inputs.hpp"
#include "reporting/html.hpp"
#include "reporting/result.hpp"

namespace ruleproof::cli {

/// --summary FILE: where the Markdown summary goes (default: beside the JSON).
inline void add_summary_option(CLI::App *sub, std::string &summary) {
  sub->add_option("--summary", summary,
                  "Markdown summary to paste into a pull request (default: beside the JSON "
                  "report, <name>.summary.md)");
}

/// --shard i/n: run the i-th of n pieces (1 <= i <= n); `ruleproof merge` joins the pieces.
inline void add_shard_option(CLI::App *sub, std::string &shard, const std::string &of_what) {
  sub->add_option("--shard", shard,
                  "run piece i of n (i/n, 1 <= i <= n) of the " + of_what +
                      "; ruleproof merge joins the pieces' reports into the whole run's");
}

/// "i/n" parsed; nothing when empty. Throws InputError("--shard", ...) when malformed.
inline std::optional<std::pair<std::size_t, std::size_t>> parse_shard(const std::string &text) {
  if (text.empty())
    return std::nullopt;
  const std::size_t slash = text.find('/');
  std::size_t i = 0, n = 0;
  try {
    std::size_t used_i = 0, used_n = 0;
    if (slash == std::string::npos)
      throw std::invalid_argument("no slash");
    i = std::stoul(text.substr(0, slash), &used_i);
    n = std::stoul(text.substr(slash + 1), &used_n);
    if (used_i != slash || used_n != text.size() - slash - 1)
      throw std::invalid_argument("trailing characters");
  } catch (const std::exception &) {
    throw InputError("--shard", "'" + text + "' is not i/n (as 2/4)");
  }
  if (n == 0 || i == 0 || i > n)
    throw InputError("--shard", "'" + text + "': need 1 <= i <= n");
  return std::make_pair(i, n);
}

/// True when item `k` (0-based) of a list belongs to the shard (round robin, so each shard
/// gets a share of every part of the list).
inline bool in_shard(const std::optional<std::pair<std::size_t, std::size_t>> &shard,
                     std::size_t k) {
  return !shard || k % shard->second == shard->first - 1;
}

/// Writes a finished run: JSON at `json`, the summary at `summary` (or beside it), the HTML
/// page beside the JSON (verify.json -> verify.html).
inline void write_run_and_page(reports::Run &run, const std::string &json,
                               const std::string &summary) {
  reports::write_run(run, json, summary);
  const std::filesystem::path page = reports::html_path_for(json);
  reports::write_html({run}, {std::filesystem::path(json).filename().string()}, page);
  fmt::print(stderr, "ruleproof {}: wrote {}, {} and {}\n", run.command, json,
             summary.empty() ? reports::summary_path_for(json).string() : summary, page.string());
}

/// Finishes the run and writes it (write_run_and_page).
inline void write_report(reports::Run &run, const std::string &json, const std::string &summary) {
  reports::finish_run(run);
  write_run_and_page(run, json, summary);
}

} // namespace ruleproof::cli
