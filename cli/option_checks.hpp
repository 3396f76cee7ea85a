// ruleproof: what the commands check of their options before anything is computed: counts
// that must be at least 1, and output paths, so that a path that cannot be written is bad
// input (exit 2) and no run fails half-way through writing its files.
#pragma once

#include <filesystem>
#include <string>

#include <CLI/CLI.hpp>
#include <unistd.h>

#include "reference/core/inputs.hpp"
#include "reporting/result.hpp"

namespace ruleproof::cli {

/// \brief A CLI11 check for a count (cases, threads): a whole number, at least 1; its message
/// names the option and the value ("--cases: '0' is not a whole number of at least 1").
inline const CLI::Validator at_least_one(
    [](std::string &text) -> std::string {
      const bool digits =
          !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
      if (digits && text.find_first_not_of('0') != std::string::npos)
        return "";
      return "'" + text + "' is not a whole number of at least 1";
    },
    "N >= 1");

/// \brief Refuses a path where `option` could not put its file (or, with `folder`, its folder):
/// one that is a folder (a file), or whose nearest existing ancestor is a file or cannot be
/// written to. Throws InputError(option, ...).
inline void expect_writable(const std::string &option, const std::filesystem::path &path,
                            bool folder = false) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto refuse = [&](const std::string &why) {
    throw InputError(option, "cannot write " + path.string() + ": " + why);
  };
  if (fs::exists(path, ec) && fs::is_directory(path, ec) != folder)
    refuse(folder ? "a file, not a folder" : "a folder");
  for (fs::path p = fs::absolute(path, ec).parent_path();; p = p.parent_path()) {
    if (fs::exists(p, ec)) {
      if (!fs::is_directory(p, ec))
        refuse(p.string() + " is a file, not a folder");
      if (::access(p.c_str(), W_OK) != 0)
        refuse(p.string() + " is not writable");
      return;
    }
    if (p == p.parent_path())
      return;
  }
}

/// expect_writable for a JSON report (--out) and its summary (--summary, beside the JSON when
/// empty).
inline void expect_report_writable(const std::string &json, const std::string &summary) {
  expect_writable("--out", json);
  expect_writable("--summary",
                  summary.empty() ? reports::summary_path_for(json).string() : summary);
}

} // namespace ruleproof::cli
