// ruleproof: the launchers of the gated_oja chunkwise kernels (gpu/chunk_gated_oja.cu), as the
// host API (gpu/chunk_gated_oja.cpp) calls them. gated_oja runs the delta-rule launchers
// (delta_launch.hpp) with keys and values exchanged; what it adds is here. Layouts as in
// chunk_launch.hpp. Plain C++17 and raw device pointers (included by nvcc).
#pragma once

#include "chunk_launch.hpp"

namespace ruleproof::gpu::detail {

/// gated_oja's output (d in gated_oja's own orientation: K keys, V values, G = V): o =
/// e^g_cum . (q~ h) + sum_{i <= r} (q~_r . k_new_i) v_i . e^(g_cum_r - g_cum_i), with h_vk the
/// state at each chunk's start as the delta-rule kernels keep it, transposed: [NC, H, V, K].
void launch_chunk_oja_fwd_o(const void *q, const void *v, const float *k_new, const float *g_cum,
                            const float *h_vk, void *o, const DeviceChunkTable &t,
                            const ChunkDims &d);
/// gated_oja's output on tensor cores (gpu/chunk_gated_oja_tc.cu), the same o from k_new [B*T, H,
/// K] and the states h_vk [NC, H, V, K] in the input type, and the raw gate g (its chunk-local
/// cumulative sums taken in the kernel).
void launch_chunk_oja_fwd_o_tc(const void *q, const void *v, const void *k_new, const void *h_vk,
                               const float *g, void *o, const DeviceChunkTable &t,
                               const ChunkDims &d);
/// y [M, H, Y, X] = x [M, H, X, Y] with its last two axes exchanged (fp32 states).
void launch_transpose_states(const float *x, float *y, int M, int H, int X, int Y);

} // namespace ruleproof::gpu::detail
