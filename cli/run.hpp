// ruleproof run: one rule in one form on the tensors of a file.
#pragma once

#include <CLI/CLI.hpp>

namespace ruleproof::cli {

/// Registers `ruleproof run`; its exit code lands in `status`.
void add_run_command(CLI::App &app, int &status);

} // namespace ruleproof::cli
