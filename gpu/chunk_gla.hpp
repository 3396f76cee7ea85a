// ruleproof: the host API of the chunkwise GLA kernels (gpu/chunk_gla.cu): gla (per-key gate)
// and simple_gla (scalar gate), forward and backward, on device buffers, with every shape
// and element type checked (InputError) before anything runs (chunk_common.hpp states the
// conventions). Where ruleproof was built without nvcc the checks still run, then the call
// throws std::runtime_error.
#pragma once

#include "chunk_common.hpp"

namespace ruleproof::gpu {

/// \brief The tensors of one call, as device buffers (not owned). h0 may be null.
struct GlaArgs {
  const DeviceArray *q = nullptr, *k = nullptr, *v = nullptr, *g = nullptr;
  const DeviceArray *h0 = nullptr; ///< initial state [N, H, K, V] fp32, or null (zeros)
};

/// \brief The forward's outputs, and its stages when asked (else empty).
struct GlaForward {
  DeviceArray o;           ///< [B, T, H, V], the input type
  DeviceArray final_state; ///< [N, H, K, V] fp32, when output_final_state
  DeviceArray g_cum;       ///< stage: chunk_local_cumsum of g, g's shape, fp32
  DeviceArray h;           ///< stage: the state at each chunk's start, [NC, H, K, V] fp32
  DeviceArray A;           ///< stage: intra-chunk scores, [B, T, H, 64] fp32, zero for j > i
};

/// \brief The gradients of <dO, O> + <dS_T, S_T>, and the backward's stage when asked.
struct GlaGrads {
  DeviceArray dq, dk, dv; ///< shapes of q, k, v, the input type
  DeviceArray dg;         ///< shape of g, fp32
  DeviceArray dh0;        ///< [N, H, K, V] fp32, when h0 was given
  DeviceArray dh;         ///< stage: gradient of the state after each chunk, [NC, H, K, V] fp32
};

/// \brief Chunkwise forward of gla (GateKind::key) or simple_gla (GateKind::scalar).
GlaForward chunk_gla_fwd(GateKind gate, const GlaArgs &args, const ChunkOptions &opts);

/// \brief Chunkwise backward (recomputes the forward's states); d_ht may be null (zero).
GlaGrads chunk_gla_bwd(GateKind gate, const GlaArgs &args, const DeviceArray &d_o,
                       const DeviceArray *d_ht, const ChunkOptions &opts);

} // namespace ruleproof::gpu
