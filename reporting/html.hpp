// ruleproof: the HTML report, one self-contained page (no file or address outside it is
// fetched) of one or more runs in the result format (result.hpp): each run's envelope and
// counts; the error profiles along the sequence per head and the error growth against T
// (profile.hpp, from the runs' details); each kernel output's error against its emulated
// twin's; every result in a table filtered by verdict, by note or rule, and by text. The page
// embeds the runs' JSON and draws the plots (SVG) and tables with its own script, which
// writes what it drew, and any script error, into the element #render-status.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "result.hpp"

namespace ruleproof::reports {

/// \brief The page for `runs`, `sources[i]` naming where runs[i] came from (a file name).
std::string html_report(const std::vector<Run> &runs, const std::vector<std::string> &sources);

/// Writes the page atomically (a temporary file, then a rename).
void write_html(const std::vector<Run> &runs, const std::vector<std::string> &sources,
                const std::filesystem::path &out);

/// The page's default path beside a JSON file: verify.json -> verify.html.
std::filesystem::path html_path_for(const std::filesystem::path &json);

} // namespace ruleproof::reports
