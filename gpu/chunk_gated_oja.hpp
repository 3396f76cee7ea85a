// ruleproof: the host API of the chunkwise gated_oja kernels (gpu/chunk_gated_oja.cu, with the
// delta rules' kernels of gpu/chunk_delta.cu), forward and backward, on device buffers, with
// every shape and element type checked (InputError) before anything runs (chunk_common.hpp
// states the conventions). Where ruleproof was built without nvcc the checks still run, then
// the call throws std::runtime_error.
//
// gated_oja: S_t = S_{t-1} Diag(exp(g_t)) (I - beta_t v_t v_t^T) + beta_t k_t v_t^T, g
// [B, T, H, V] fp32 (per value), beta [B, T, H] fp32; reference/gated_oja/gated_oja.hpp.
#pragma once

#include "chunk_common.hpp"
#include "chunk_delta.hpp" // DeltaSaved

namespace ruleproof::gpu {

/// \brief The tensors of one gated_oja call, as device buffers (not owned). h0 may be null.
struct GatedOjaArgs {
  const DeviceArray *q = nullptr, *k = nullptr, *v = nullptr;
  const DeviceArray *g = nullptr;    ///< [B, T, H, V] fp32, per value
  const DeviceArray *beta = nullptr; ///< [B, T, H] fp32
  const DeviceArray *h0 = nullptr;   ///< initial state [N, H, K, V] fp32, or null (zeros)
};

/// \brief gated_oja's forward outputs, and its stages when asked (else empty), named as
/// reference/gated_oja/chunk.hpp names them.
struct GatedOjaForward {
  DeviceArray o;           ///< [B, T, H, V], the input type
  DeviceArray final_state; ///< [N, H, K, V] fp32, when output_final_state
  DeviceArray g_cum;       ///< stage: chunk_local_cumsum of g, [B, T, H, V] fp32
  DeviceArray A0;          ///< stage: chunk_scaled_dot_vvt, [B, T, H, 64] fp32, zero for j >= i
  DeviceArray A;           ///< stage: solve_tril, (I + A0)^-1, [B, T, H, 64] fp32
  DeviceArray w;           ///< stage: recompute_w_u, A Diag(beta) (v . e^g_cum), [B, T, H, V] fp32
  DeviceArray u;           ///< stage: recompute_w_u, A Diag(beta) k, [B, T, H, K] fp32
  DeviceArray h;           ///< stage: the state at each chunk's start, [NC, H, K, V] fp32
  DeviceArray k_new;       ///< stage: u - w h^T, [B, T, H, K] fp32
  /// for the backward, when opts.keep_for_backward on the tensor-core path: A of the delta rule
  /// on v (DeltaSaved's A; no Aqk, which the backward makes on dO)
  DeltaSaved saved;
};

/// \brief gated_oja's gradients of <dO, O> + <dS_T, S_T>, and the backward's stage when asked.
struct GatedOjaGrads {
  DeviceArray dq, dk, dv; ///< shapes of q, k, v, the input type
  DeviceArray dg;         ///< [B, T, H, V] fp32
  DeviceArray dbeta;      ///< [B, T, H] fp32
  DeviceArray dh0;        ///< [N, H, K, V] fp32, when h0 was given
  DeviceArray dh;         ///< stage: gradient of the state after each chunk, [NC, H, K, V] fp32
};

/// \brief check_chunk_shapes (per-value gate g), and beta fp32 [B, T, H].
ChunkShapes check_gated_oja_shapes(const ArraySpec &q, const ArraySpec &k, const ArraySpec &v,
                                   const ArraySpec &g, const ArraySpec &beta, const ArraySpec *h0,
                                   const ChunkOptions &opts, const ArraySpec *d_o = nullptr,
                                   const ArraySpec *d_ht = nullptr);

/// \brief Chunkwise forward of gated_oja.
GatedOjaForward chunk_gated_oja_fwd(const GatedOjaArgs &args, const ChunkOptions &opts);

/// \brief Chunkwise backward (recomputes the forward's stages); d_ht may be null (zero). `saved`
/// (the forward's GatedOjaForward::saved of the same arguments, tensor-core path) spares it the
/// triangular solve; its shapes and types are checked (InputError), not its values.
GatedOjaGrads chunk_gated_oja_bwd(const GatedOjaArgs &args, const DeviceArray &d_o,
                                  const DeviceArray *d_ht, const ChunkOptions &opts,
                                  const DeltaSaved *saved = nullptr);

} // namespace ruleproof::gpu
