// ruleproof: the host API of the chunkwise dplr kernels (gpu/chunk_dplr.cu), forward and
// backward, on device buffers, with every shape and element type checked (InputError) before
// anything runs (chunk_common.hpp states the conventions). Where ruleproof was built without
// nvcc the checks still run, then the call throws std::runtime_error.
//
// dplr_fla: flash-linear-attention's chunk_dplr_delta_rule, with its argument names:
//   S_t = Diag(exp(gk_t)) S_{t-1} + b_t (a_t^T S_{t-1}) + k_t v_t^T,   o_t = S_t^T (scale q_t),
// q, k, a, b [B, T, H, K] and v [B, T, H, V] in bf16 or fp16 (all alike), gk [B, T, H, K] fp32;
// reference/dplr/dplr.hpp with Parameterisation::fla (the registry's dplr_fla).
#pragma once

#include "chunk_common.hpp"

namespace ruleproof::gpu {

/// \brief The tensors of one dplr call, as device buffers (not owned). h0 may be null.
struct DplrArgs {
  const DeviceArray *q = nullptr, *k = nullptr, *v = nullptr;
  const DeviceArray *a = nullptr, *b = nullptr; ///< [B, T, H, K], the input type
  const DeviceArray *gk = nullptr;              ///< [B, T, H, K] fp32
  const DeviceArray *h0 = nullptr; ///< initial state [N, H, K, V] fp32, or null (zeros)
};

/// \brief dplr's forward outputs, and its stages when asked (else empty), named as
/// reference/dplr/chunk.hpp names them in its engine's form S_t = (A_t - a~_t d_t^T) S_{t-1} +
/// k_t v_t^T, where a~ = b and d = -a: A_qa, A_ba are flash-linear-attention's A_qb and -A_ab.
struct DplrForward {
  DeviceArray o;           ///< [B, T, H, V], the input type
  DeviceArray final_state; ///< [N, H, K, V] fp32, when output_final_state
  DeviceArray g_cum;       ///< stage: chunk_local_cumsum of gk, [B, T, H, K] fp32
  DeviceArray A_qk, A_qa;  ///< stage: scores q~ k^T, q~ a~^T decayed, [B, T, H, 64], j <= i
  DeviceArray A_ba, A_bk;  ///< stage: scores d a~^T, d k^T decayed (exclusive), j < i
  DeviceArray E;           ///< stage: solve_tril, (I + A_ba)^-1, [B, T, H, 64] fp32
  DeviceArray w;           ///< stage: recompute_w_c, E (d . e^g_excl), [B, T, H, K] fp32
  DeviceArray c;           ///< stage: recompute_w_c, -E A_bk v, [B, T, H, V] fp32
  DeviceArray h;  ///< stage: chunk_dplr_fwd_h, the state at each chunk's start, [NC, H, K, V]
  DeviceArray v2; ///< stage: chunk_dplr_fwd_h, c - w h, [B, T, H, V] fp32
};

/// \brief dplr's gradients of <dO, O> + <dS_T, S_T>, and the backward's stage when asked.
struct DplrGrads {
  DeviceArray dq, dk, dv, da, db; ///< shapes of q, k, v, a, b, the input type
  DeviceArray dgk;                ///< [B, T, H, K] fp32
  DeviceArray dh0;                ///< [N, H, K, V] fp32, when h0 was given
  DeviceArray dh; ///< stage: chunk_dplr_bwd_dhu, gradient of the state after each chunk
};

/// \brief check_chunk_shapes (per-key gate gk), and a, b like k.
ChunkShapes check_dplr_shapes(const ArraySpec &q, const ArraySpec &k, const ArraySpec &v,
                              const ArraySpec &a, const ArraySpec &b, const ArraySpec &gk,
                              const ArraySpec *h0, const ChunkOptions &opts,
                              const ArraySpec *d_o = nullptr, const ArraySpec *d_ht = nullptr);

/// \brief Chunkwise forward of dplr (flash-linear-attention's parameterisation).
DplrForward chunk_dplr_fwd(const DplrArgs &args, const ChunkOptions &opts);

/// \brief Chunkwise backward (recomputes the forward's stages); d_ht may be null (zero).
DplrGrads chunk_dplr_bwd(const DplrArgs &args, const DeviceArray &d_o, const DeviceArray *d_ht,
                         const ChunkOptions &opts);

} // namespace ruleproof::gpu
