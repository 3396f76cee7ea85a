// ruleproof html: one HTML page (reporting/html.hpp) of one or more result files, e.g. a
// verify, a claims and a gpu-check run side by side.
#pragma once

#include <CLI/CLI.hpp>

namespace ruleproof::cli {

/// Registers `ruleproof html`; sets `status` 0 when the page is written. A missing or corrupt
/// file throws reports::ReportError (exit 2) before anything is written.
void add_html_command(CLI::App &app, int &status);

} // namespace ruleproof::cli
