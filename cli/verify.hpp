// ruleproof verify: runs the property checks of property_tests/checks for every rule, form
// and scalar at a built-in sweep, prints a table and writes a JSON report.
#pragma once

#include <CLI/CLI.hpp>

namespace ruleproof::cli {

/// Registers `ruleproof verify` on the application; when it runs it sets `status`: 0 when
/// every property holds, 1 when one fails, 2 for an unknown rule, property or scalar.
void add_verify_command(CLI::App &app, int &status);

} // namespace ruleproof::cli
