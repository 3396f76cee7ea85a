// ruleproof check-dump: any kernel's call, dumped to a safetensors file (kernel_dump.hpp),
// judged as gpu-check judges the project's kernels (gpu/check.hpp): every output and
// gradient against the float128 truth on the same inputs, within twin_factor of the emulated
// twin's error, and never NaN.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "gpu/check.hpp"
#include "kernel_dump.hpp"

namespace ruleproof::cli {

/// The verdict on each output and gradient the dump holds, for a kernel of `rule`.
std::vector<gpu::check::Verdict> judge_dump(gpu::KernelRule rule, const KernelDump<float> &dump);

void add_check_dump_command(CLI::App &app, int &status);

} // namespace ruleproof::cli
