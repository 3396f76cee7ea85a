// ruleproof gpu-check: the GPU kernels (gpu/) against the float128 truth and their emulated
// twin, on fixed and random cases (gpu/check.hpp), with a JSON and a Markdown report.
#pragma once

#include <CLI/CLI.hpp>

namespace ruleproof::cli {

/// Registers `ruleproof gpu-check`; when it runs it sets `status`: 0 when every check holds
/// (or no GPU was found, unless --require-gpu), 1 when one fails.
void add_gpu_check_command(CLI::App &app, int &status);

} // namespace ruleproof::cli
