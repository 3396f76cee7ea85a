// ruleproof gate: a run compared with its committed baseline (reporting/gate.hpp), for CI; and
// ruleproof merge: the reports of a run's shards joined into the whole run's.
#pragma once

#include <CLI/CLI.hpp>

namespace ruleproof::cli {

void add_gate_command(CLI::App &app, int &status);
void add_merge_command(CLI::App &app, int &status);

} // namespace ruleproof::cli
