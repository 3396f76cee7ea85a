// ruleproof: the rules the GPU kernels compute, by name: the GLA family (gpu/chunk_gla.hpp) and
// the delta rules (gpu/chunk_delta.hpp), each with a scalar or a per-key gate; the low-rank
// rules: dplr in flash-linear-attention's parameterisation (gpu/chunk_dplr.hpp: per-key gate,
// the pair a, b) and gated_oja (gpu/chunk_gated_oja.hpp: per-value gate, beta).
#pragma once

#include <string>
#include <vector>

#include "reference/core/validate.hpp"

namespace ruleproof::gpu {

enum class KernelRule { simple_gla, gla, gated_delta_rule, kda, dplr_fla, gated_oja };

/// The rules whose calls take q, k, v, g (and beta) alone: what check-dump's dumps and the
/// benchmark's inputs hold.
inline const KernelRule kernel_rules[] = {KernelRule::simple_gla, KernelRule::gla,
                                          KernelRule::gated_delta_rule, KernelRule::kda};
/// The low-rank rules: dplr_fla takes the pair a, b besides; gated_oja's gate is per value.
inline const KernelRule low_rank_kernel_rules[] = {KernelRule::dplr_fla, KernelRule::gated_oja};
/// Every rule the kernels compute: what gpu-check and the GPU tests walk.
inline const KernelRule all_kernel_rules[] = {KernelRule::simple_gla,       KernelRule::gla,
                                              KernelRule::gated_delta_rule, KernelRule::kda,
                                              KernelRule::dplr_fla,         KernelRule::gated_oja};

/// The rule's name as DESIGN.md and the reference write it.
inline std::string rule_name(KernelRule r) {
  switch (r) {
  case KernelRule::simple_gla: return "simple_gla";
  case KernelRule::gla: return "gla";
  case KernelRule::gated_delta_rule: return "gated_delta_rule";
  case KernelRule::kda: return "kda";
  case KernelRule::dplr_fla: return "dplr_fla";
  case KernelRule::gated_oja: return "gated_oja";
  }
  return "?";
}

inline GateKind gate_of(KernelRule r) {
  switch (r) {
  case KernelRule::simple_gla:
  case KernelRule::gated_delta_rule: return GateKind::scalar;
  case KernelRule::gla:
  case KernelRule::kda:
  case KernelRule::dplr_fla: return GateKind::key;
  case KernelRule::gated_oja: return GateKind::value;
  }
  return GateKind::none;
}

/// Whether the rule is a delta rule (gated_delta_rule, kda: it takes beta, and has the WY
/// stages of gpu/chunk_delta.hpp).
inline bool is_delta(KernelRule r) {
  return r == KernelRule::gated_delta_rule || r == KernelRule::kda;
}

/// Whether the rule takes beta [B, T, H] (the delta rules and gated_oja).
inline bool has_beta(KernelRule r) { return is_delta(r) || r == KernelRule::gated_oja; }

/// Whether the rule takes the low-rank pair a, b [B, T, H, K] (dplr_fla).
inline bool has_ab(KernelRule r) { return r == KernelRule::dplr_fla; }

/// The stages the kernels of `rule` return, in the order they compute them (the names of
/// reference/gla/chunk.hpp, reference/kda/chunk.hpp, reference/dplr/chunk.hpp and
/// reference/gated_oja/chunk.hpp; dplr's in the names of its engine's form S_t = (A_t -
/// a_t d_t^T) S_{t-1} + k_t v_t^T, whose a is flash-linear-attention's b and d its -a).
inline std::vector<const char *> stage_names(KernelRule rule) {
  switch (rule) {
  case KernelRule::gated_delta_rule:
  case KernelRule::kda: return {"g_cum", "A0", "A", "w", "u", "h", "v_new"};
  case KernelRule::dplr_fla:
    return {"g_cum", "A_qk", "A_qa", "A_ba", "A_bk", "E", "w", "c", "h", "v2"};
  case KernelRule::gated_oja: return {"g_cum", "A0", "A", "w", "u", "h", "k_new"};
  case KernelRule::simple_gla:
  case KernelRule::gla: break;
  }
  return {"g_cum", "h", "A"};
}

} // namespace ruleproof::gpu
