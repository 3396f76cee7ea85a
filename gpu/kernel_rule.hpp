// ruleproof: the rules the GPU kernels compute, by name: the GLA family (gpu/chunk_gla.hpp) and
// the delta rules (gpu/chunk_delta.hpp), each with a scalar or a per-key gate.
#pragma once

#include <string>
#include <vector>

#include "reference/core/validate.hpp"

namespace ruleproof::gpu {

enum class KernelRule { simple_gla, gla, gated_delta_rule, kda };

inline const KernelRule kernel_rules[] = {KernelRule::simple_gla, KernelRule::gla,
                                          KernelRule::gated_delta_rule, KernelRule::kda};

/// The rule's name as DESIGN.md and the reference write it.
inline std::string rule_name(KernelRule r) {
  switch (r) {
  case KernelRule::simple_gla: return "simple_gla";
  case KernelRule::gla: return "gla";
  case KernelRule::gated_delta_rule: return "gated_delta_rule";
  case KernelRule::kda: return "kda";
  }
  return "?";
}

inline GateKind gate_of(KernelRule r) {
  return r == KernelRule::gla || r == KernelRule::kda ? GateKind::key : GateKind::scalar;
}

/// Whether the rule is a delta rule (it takes beta, and has the WY stages).
inline bool is_delta(KernelRule r) {
  return r == KernelRule::gated_delta_rule || r == KernelRule::kda;
}

/// The stages the kernels of `rule` return, in the order they compute them (the names of
/// reference/gla/chunk.hpp and reference/kda/chunk.hpp).
inline std::vector<const char *> stage_names(KernelRule rule) {
  if (is_delta(rule))
    return {"g_cum", "A0", "A", "w", "u", "h", "v_new"};
  return {"g_cum", "h", "A"};
}

} // namespace ruleproof::gpu
