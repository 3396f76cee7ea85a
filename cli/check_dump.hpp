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
#include "reports/profile.hpp"

namespace ruleproof::cli {

/// The name of a rule's log-gate in a dump, flash-linear-attention's: gk for dplr_fla, else g
/// (its gradient is d + that name).
std::string gate_tensor(gpu::KernelRule rule);

/// The verdict on each output and gradient the dump holds, for a kernel of `rule`; with
/// `profiles`, also the error profiles (reports/profile.hpp) of the kernel and of the twin
/// against the truth, for each of them laid out [B, T, H, ...].
std::vector<gpu::check::Verdict> judge_dump(gpu::KernelRule rule, const KernelDump<float> &dump,
                                            std::vector<reports::ErrorProfile> *profiles = nullptr);

void add_check_dump_command(CLI::App &app, int &status);

} // namespace ruleproof::cli
