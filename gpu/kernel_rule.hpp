// ruleproof: the rules the GPU kernels compute, by name: the GLA family (gpu/chunk_gla.hpp) and
// the delta rules (gpu/chunk_delta.hpp), each with a scalar or a per-key gate; the low-rank
// rules: dplr in flash-linear-attention's parameterisation (gpu/chunk_dplr.hpp: per-key gate,
// the pair a, b) and gated_oja (gpu/chunk_gated_oja.hpp: per-value gate, beta).
#pragma once

#include <string_view>
#include <vector>

#include "reference/rule_id.hpp"

namespace ruleproof::gpu {

/// A rule the kernels compute: the registry's id (reference/rule_id.hpp), one of
/// all_kernel_rules. Its name (name_of), gate (gate_of), beta (has_beta), low-rank pair (has_ab)
/// and whether it is a delta rule (is_delta) come from the registry's table.
using KernelRule = RuleId;

/// The rules whose calls take q, k, v, g (and beta) alone: what check-dump's dumps and the
/// benchmark's inputs hold.
inline constexpr KernelRule kernel_rules[] = {KernelRule::simple_gla, KernelRule::gla,
                                              KernelRule::gated_delta_rule, KernelRule::kda};
/// The low-rank rules: dplr_fla takes the pair a, b besides; gated_oja's gate is per value.
inline constexpr KernelRule low_rank_kernel_rules[] = {KernelRule::dplr_fla, KernelRule::gated_oja};
/// Every rule the kernels compute: what gpu-check and the GPU tests walk.
inline constexpr KernelRule all_kernel_rules[] = {
    KernelRule::simple_gla, KernelRule::gla,      KernelRule::gated_delta_rule,
    KernelRule::kda,        KernelRule::dplr_fla, KernelRule::gated_oja};

/// \brief Which kernels run a call: the CUDA-core kernels (every product in fp32 on CUDA cores;
/// judged under the fp32 policy, gpu/twin.hpp) or the tensor-core kernels (products on tensor
/// cores with operands in the input type; judged under the tensor-core policy). The tensor-core
/// path covers the forward and the backward of every rule: gla and simple_gla (gpu/chunk_gla_tc.cu,
/// gpu/chunk_gla_bwd_tc.cu), gated_delta_rule and kda (gpu/chunk_delta_tc.cu,
/// gpu/chunk_delta_bwd_tc.cu), gated_oja (kda's kernels on its exchanged arguments, and
/// gpu/chunk_gated_oja_tc.cu) and dplr_fla (gpu/chunk_dplr_tc.cu) (has_tensor_core_forward,
/// has_tensor_core_backward). The default stays cuda_cores until the tensor-core kernels are
/// faster and hold.
enum class KernelPath { cuda_cores, tensor_cores };

inline const char *path_name(KernelPath p) {
  return p == KernelPath::tensor_cores ? "tensor-cores" : "cuda-cores";
}

/// The path of that name (path_name's inverse; any other name is the default, cuda_cores: the
/// command lines accept only the two names).
inline KernelPath path_named(std::string_view name) {
  return name == path_name(KernelPath::tensor_cores) ? KernelPath::tensor_cores
                                                     : KernelPath::cuda_cores;
}

/// Whether the forward of `rule` has a tensor-core kernel.
inline bool has_tensor_core_forward(KernelRule) { return true; }
/// Whether the backward of `rule` has a tensor-core kernel.
inline bool has_tensor_core_backward(KernelRule) { return true; }

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
  default: break; // simple_gla, gla: the GLA family's stages
  }
  return {"g_cum", "h", "A"};
}

} // namespace ruleproof::gpu
