// ruleproof: the launchers of the GLA-family chunkwise kernels (gpu/chunk_gla.cu), as the host
// API (gpu/chunk_gla.cpp) calls them. Plain C++17 and raw device pointers: this header is
// included by nvcc, so it must stay free of Eigen, Boost and C++20.
//
// Layouts (row r of the flattened [B*T] time axis; sequence n covers rows [bos, eos)):
//   q, k [B*T, H, K]; v, o, do [B*T, H, V] (bf16 or fp16);
//   g, g_cum, dg [B*T, H, G] with G = K (gla, per-key gate) or 1 (simple_gla, scalar gate), fp32;
//   h0, ht, dht, dh0 [N, H, K, V] fp32; h, dh (per chunk) [NC, H, K, V] fp32;
//   A [B*T, H, C] fp32 (row r, column j of r's chunk; zero above the diagonal).
#pragma once

namespace ruleproof::gpu {

/// The chunk size of every kernel (flash-linear-attention's BT).
constexpr int kernel_chunk_size = 64;

namespace detail {

/// The sequences and chunks of one call, in device memory (int32 arrays).
struct DeviceChunkTable {
  const int *seq_bos = nullptr;         ///< [N] first row of sequence n
  const int *seq_eos = nullptr;         ///< [N] one past its last row
  const int *seq_first_chunk = nullptr; ///< [N + 1] index of its first chunk; NC at the end
  const int *chunk_seq = nullptr;       ///< [NC] sequence of chunk c
  const int *chunk_bos = nullptr;       ///< [NC] first row of chunk c
  int N = 0, NC = 0;
};

/// Sizes and options of one call.
struct GlaDims {
  int H = 0, K = 0, V = 0;
  int G = 0; ///< gate columns: K (per-key gate) or 1 (scalar gate)
  float scale = 1;
  bool fp16 = false; ///< q, k, v, o, do, dq, dk, dv are fp16 (else bf16)
};

// Each launcher throws std::runtime_error naming the kernel when CUDA reports an error.
// Optional pointers (nullptr) are noted; every other pointer must be valid.

/// g_cum = chunk_local_cumsum(g): the sum of g from the chunk's first row to row r.
void launch_chunk_local_cumsum(const float *g, float *g_cum, const DeviceChunkTable &t,
                               const GlaDims &d);
/// h[c] = the state at the start of chunk c; ht (optional) the final state; h0 optional.
void launch_chunk_fwd_h(const void *k, const void *v, const float *g_cum, const float *h0, float *h,
                        float *ht, const DeviceChunkTable &t, const GlaDims &d);
/// o = (q~ . e^g_cum) h + A v, with A (optional output) the intra-chunk scores.
void launch_chunk_fwd_o(const void *q, const void *k, const void *v, const float *g_cum,
                        const float *h, void *o, float *A, const DeviceChunkTable &t,
                        const GlaDims &d);
/// dh[c] = the gradient of the state at the end of chunk c (dht optional, zero when absent);
/// dh0 (optional) the gradient of the initial state.
void launch_chunk_bwd_dh(const void *q, const void *d_o, const float *g_cum, const float *dht,
                         float *dh, float *dh0, const DeviceChunkTable &t, const GlaDims &d);
/// dq, dk, dv of every chunk, and dG = q . dq - k . dk [B*T, H, K] fp32 (before the gate's
/// reverse cumulative sum).
void launch_chunk_bwd_dqkv(const void *q, const void *k, const void *v, const float *g_cum,
                           const float *h, const void *d_o, const float *dh, void *dq, void *dk,
                           void *dv, float *dG, const DeviceChunkTable &t, const GlaDims &d);
/// dg = the reverse cumulative sum of dG over each sequence, with rowsum(ht . dht) added at
/// its last row (ht, dht optional: both or neither); summed over keys when G == 1. dG is
/// overwritten.
void launch_chunk_bwd_dg(float *dG, const float *ht, const float *dht, float *dg,
                         const DeviceChunkTable &t, const GlaDims &d);

} // namespace detail
} // namespace ruleproof::gpu
