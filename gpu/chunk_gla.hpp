// ruleproof: the host API of the chunkwise GLA kernels (gpu/chunk_gla.cu): gla (per-key gate)
// and simple_gla (scalar gate), forward and backward, on device buffers, with every shape
// and element type checked (InputError) before anything runs. Where ruleproof was built
// without nvcc the checks still run, then the call throws std::runtime_error.
//
// Conventions (flash-linear-attention's, DESIGN.md): q, k [B, T, H, K] and v [B, T, H, V] in
// bf16 or fp16 (all three alike), K and V in {64, 128}; g, natural-log gates (g <= 0), fp32
// [B, T, H] (simple_gla) or [B, T, H, K] (gla); states [N, H, K, V] fp32; cu_seqlens (N + 1
// offsets, B == 1, empty sequences allowed). Chunk size 64. Values are not checked (finite
// inputs and g <= 0 are the caller's): the kernels compute what the formulas give.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "buffer.hpp"
#include "detail/gla_launch.hpp"
#include "reference/core/validate.hpp"

namespace ruleproof::gpu {

/// \brief The tensors of one call, as device buffers (not owned). h0 may be null.
struct GlaArgs {
  const DeviceArray *q = nullptr, *k = nullptr, *v = nullptr, *g = nullptr;
  const DeviceArray *h0 = nullptr; ///< initial state [N, H, K, V] fp32, or null (zeros)
};

/// \brief Everything that is not a tensor.
struct GlaOptions {
  std::optional<double> scale;          ///< multiplies q; default K^-1/2
  std::vector<std::int64_t> cu_seqlens; ///< N + 1 offsets with B == 1; empty: a sequence a row
  bool output_final_state = true;
  bool return_stages = false; ///< also return g_cum, h, A (forward) and dh (backward)
  bool poison_outputs =
      false; ///< fill outputs with NaN first (checks that every element is written)
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

/// \brief The sizes of a checked call.
struct GlaShapes {
  std::size_t B, T, H, K, V, N, NC; ///< NC: chunks of 64 over every sequence
};

/// \brief Checks shapes and element types (InputError naming the tensor): q, k, v rank 4,
/// alike, bf16 or fp16, K and V in {64, 128}; g fp32 of the gate's shape; h0 fp32 [N, H, K, V];
/// cu_seqlens as validate_sequences says; do like v, dht fp32 like h0 (when given).
GlaShapes check_gla_shapes(GateKind gate, const ArraySpec &q, const ArraySpec &k,
                           const ArraySpec &v, const ArraySpec &g, const ArraySpec *h0,
                           const GlaOptions &opts, const ArraySpec *d_o = nullptr,
                           const ArraySpec *d_ht = nullptr);

/// \brief Chunkwise forward of gla (GateKind::key) or simple_gla (GateKind::scalar).
GlaForward chunk_gla_fwd(GateKind gate, const GlaArgs &args, const GlaOptions &opts);

/// \brief Chunkwise backward (recomputes the forward's states); d_ht may be null (zero).
GlaGrads chunk_gla_bwd(GateKind gate, const GlaArgs &args, const DeviceArray &d_o,
                       const DeviceArray *d_ht, const GlaOptions &opts);

} // namespace ruleproof::gpu
