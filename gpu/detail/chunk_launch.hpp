// ruleproof: what every chunkwise kernel launcher shares (gpu/chunk_gla.cu, gpu/chunk_delta.cu):
// the chunk size, the chunk table, the sizes of a call, and the stage every rule begins with,
// chunk_local_cumsum. Plain C++17 and raw device pointers: included by nvcc, so free of Eigen,
// Boost and C++20.
//
// Layouts (row r of the flattened [B*T] time axis; sequence n covers rows [bos, eos)):
//   q, k [B*T, H, K]; v, o, do [B*T, H, V] (bf16 or fp16);
//   g, g_cum, dg [B*T, H, G] with G = K (per-key gate) or 1 (scalar gate), fp32;
//   h0, ht, dht, dh0 [N, H, K, V] fp32; h, dh (per chunk) [NC, H, K, V] fp32;
//   scores such as A [B*T, H, C] fp32 (row r, column j of r's chunk; zero above the diagonal
//   and past the chunk's end).
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
struct ChunkDims {
  int H = 0, K = 0, V = 0;
  int G = 0; ///< gate columns: K (per-key gate) or 1 (scalar gate)
  float scale = 1;
  bool fp16 = false; ///< q, k, v, o, do, dq, dk, dv are fp16 (else bf16)
};

// Each launcher throws std::runtime_error naming the kernel when CUDA reports an error.
// Optional pointers (nullptr) are noted; every other pointer must be valid.

/// g_cum = chunk_local_cumsum(g): the sum of g from the chunk's first row to row r.
void launch_chunk_local_cumsum(const float *g, float *g_cum, const DeviceChunkTable &t,
                               const ChunkDims &d);

} // namespace detail
} // namespace ruleproof::gpu
