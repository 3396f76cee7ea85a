// ruleproof check-dump: any kernel's call, dumped to a safetensors file (kernel_dump.hpp),
// judged as gpu-check judges the project's kernels (gpu/check.hpp): every output and
// gradient against the truth on the same inputs (float128, or on large dumps double certified
// against float128 on a sample of heads), within twin_factor of the error of the emulated twin
// (gpu/twin.hpp) under the kernel's precision policy, tensor-core unless told otherwise, and
// never NaN.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "gpu/check.hpp"
#include "kernel_dump.hpp"
#include "reporting/profile.hpp"

namespace ruleproof::cli {

/// The name of a rule's log-gate in a dump, flash-linear-attention's: gk for dplr_fla, gv for
/// gated_oja, else g (its gradient is d + that name).
std::string gate_tensor(gpu::KernelRule rule);

/// The twin's policy unless --policy says otherwise: the arithmetic of the tensor-core kernels
/// people write (gpu/twin.hpp).
inline constexpr gpu::Policy default_policy = gpu::Policy::tensor_core;

/// The policy of that name; InputError naming the known ones when there is none.
gpu::Policy policy_named(const std::string &name);

/// \brief The scalar of a dump's truth (--truth): float128 on every head; double on every head,
/// certified against float128 on a sample of heads; or, automatically, float128 when the sample
/// would hold every head, else double.
enum class Truth { automatic, float128, double_certified };

struct TruthOptions {
  Truth scalar = Truth::automatic;
  std::size_t sample_heads = 2; ///< (sequence, head) pairs the double truth is certified on
  unsigned threads = 1;         ///< heads run in parallel on this many threads
  /// Told what was computed, as each part ends ("twin", "truth in double", ...); may be empty.
  std::function<void(const std::string &)> progress;
};

/// \brief A double truth's certificate: the float128 truth of the sampled heads, each run alone,
/// and the largest difference of the double truth from it there, output by output.
struct Certification {
  /// A verdict stands when the truth's error is below this fraction of its allowed error: no
  /// ratio moves by more than 2^-10 of the allowance.
  static constexpr double certified_fraction = 0x1p-10;
  std::vector<std::pair<std::size_t, std::size_t>> heads; ///< (sequence, head) pairs
  std::map<std::string, double> discrepancy, largest; ///< max |double - float128|, max |float128|
  /// Whether the double truth's error on the sample is below certified_fraction of v's allowance.
  bool certifies(const gpu::check::Verdict &v) const;
};

/// \brief What a dump's outputs are judged against, on its inputs: the twin's outputs under a
/// policy, each rounded to the type the dump stores it in, and the truth's, read back as double.
struct DumpReference {
  Output<float> twin;
  Grads<float> twin_grads;
  Output<double> truth;
  Grads<double> truth_grads;
  std::string truth_scalar = "float128"; ///< float128, or double (then certified)
  Certification certification;           ///< the double truth's, on its sample
};

/// The twin (under `policy`; InputError when it cannot apply to the dump's input type) and the
/// truth of a dump of `rule`.
DumpReference dump_reference(gpu::KernelRule rule, gpu::Policy policy,
                             const KernelDump<float> &dump, const TruthOptions &truth = {});

/// \brief The verdict on each output and gradient the dump holds, for a kernel of `rule`,
/// against `ref`; with `profiles`, also the error profiles (reporting/profile.hpp) of the kernel
/// and of the twin against the truth, for each of them laid out [B, T, H, ...].
std::vector<gpu::check::Verdict> judge_dump(gpu::KernelRule rule, const KernelDump<float> &dump,
                                            const DumpReference &ref,
                                            std::vector<reports::ErrorProfile> *profiles = nullptr);

/// The same, the reference computed here under `policy`.
std::vector<gpu::check::Verdict> judge_dump(gpu::KernelRule rule, gpu::Policy policy,
                                            const KernelDump<float> &dump,
                                            std::vector<reports::ErrorProfile> *profiles = nullptr);

void add_check_dump_command(CLI::App &app, int &status);

/// `ruleproof rules [--json]`: the rules check-dump judges and the tensors each call takes
/// (the gate's name and shape, beta, a and b), from the registry's table: what the Python
/// package (python/ruleproof) draws its inputs by.
void add_rules_command(CLI::App &app, int &status);

} // namespace ruleproof::cli
