// ruleproof: the dumps of flash-linear-attention's kernels in data/flash-linear-attention/
// (its README says how they were made), and the faults planted in them: what the tests of
// check-dump's verdict and the sensitivity report (cli/tests/sensitivity.cpp) read.
//
// A planted fault changes a correct dump's outputs as a kernel with that bug would return them:
// the difference between the truth computed with the bug (in double, on the dump's own inputs)
// and the truth computed right is added to the kernel's own outputs, then rounded to the type
// the kernel stores them in, so the kernel's rounding stays in.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "check_dump.hpp"

namespace ruleproof::cli::corpus {

/// \brief One dump of the corpus, read as check-dump reads it.
struct Entry {
  std::string name; ///< the file's stem, e.g. gla_bf16_T128_K64
  gpu::KernelRule rule;
  KernelDump<float> dump;
};

/// The rule a dump's name starts with (the longest name that matches).
inline gpu::KernelRule rule_of_name(const std::string &name) {
  std::size_t best = 0;
  gpu::KernelRule rule = gpu::KernelRule::gla;
  for (const gpu::KernelRule r : gpu::all_kernel_rules) {
    const std::string n = std::string(name_of(r)) + "_";
    if (name.rfind(n, 0) == 0 && n.size() > best)
      best = n.size(), rule = r;
  }
  if (best == 0)
    throw std::invalid_argument(name + ": no kernel rule's name starts it");
  return rule;
}

/// Every dump of a folder, in name order.
std::vector<Entry> read_folder(const std::filesystem::path &folder);

/// \brief A fault planted in a dump: what it is, and the dump as a kernel with it returns.
struct Planted {
  std::string fault;
  KernelDump<float> dump;
};

/// \brief The faults planted in a correct dump of `rule` (those that apply to it), each alone:
///  - each gradient scaled by 1 + 16 u (u the unit roundoff of the kernel's input type);
///  - a state read from the previous chunk: every chunk but a sequence's first computes its
///    outputs from the state at the start of the chunk before;
///  - the last, partial chunk's rows of o shifted down by one step;
///  - h0 ignored (o and the final state computed from a zero state);
///  - the final-state term of the gate's gradient dropped: sum(S_T . dS_T) over the state's
///    dimensions the gate does not index, taken off every row of the sequence;
///  - one step leaking across the causal mask: inside every chunk, o at row t reads the state
///    after row t + 1;
///  - a NaN only in a padding row: the last row of dq (of o without a backward) in the last,
///    partial chunk, and the final state of an empty sequence.
std::vector<Planted> planted_faults(gpu::KernelRule rule, const KernelDump<float> &good);

/// The type the dump stores output `name` in (fp32 when it holds no such tensor).
gpu::DType type_of(const KernelDump<float> &d, const std::string &name);

/// The corpus' folder (RULEPROOF_DATA_DIR, set by the build), and its two sets.
inline std::filesystem::path data_folder() {
  return std::filesystem::path(RULEPROOF_DATA_DIR) / "flash-linear-attention";
}

} // namespace ruleproof::cli::corpus
