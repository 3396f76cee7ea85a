// ruleproof: the launchers of the GLA-family chunkwise kernels (gpu/chunk_gla.cu), as the host
// API (gpu/chunk_gla.cpp) calls them; layouts and the shared stage chunk_local_cumsum in
// chunk_launch.hpp. Plain C++17 and raw device pointers (included by nvcc).
#pragma once

#include "chunk_launch.hpp"

namespace ruleproof::gpu::detail {

/// h[c] = the state at the start of chunk c; ht (optional) the final state; h0 optional.
void launch_chunk_fwd_h(const void *k, const void *v, const float *g_cum, const float *h0, float *h,
                        float *ht, const DeviceChunkTable &t, const ChunkDims &d);
/// o = (q~ . e^g_cum) h + A v, with A (optional output) the intra-chunk scores.
void launch_chunk_fwd_o(const void *q, const void *k, const void *v, const float *g_cum,
                        const float *h, void *o, float *A, const DeviceChunkTable &t,
                        const ChunkDims &d);
/// dh[c] = the gradient of the state at the end of chunk c (dht optional, zero when absent);
/// dh0 (optional) the gradient of the initial state.
void launch_chunk_bwd_dh(const void *q, const void *d_o, const float *g_cum, const float *dht,
                         float *dh, float *dh0, const DeviceChunkTable &t, const ChunkDims &d);
/// dq, dk, dv of every chunk, and dG = q . dq - k . dk [B*T, H, K] fp32 (before the gate's
/// reverse cumulative sum).
void launch_chunk_bwd_dqkv(const void *q, const void *k, const void *v, const float *g_cum,
                           const float *h, const void *d_o, const float *dh, void *dq, void *dk,
                           void *dv, float *dG, const DeviceChunkTable &t, const ChunkDims &d);
/// The buffers the tensor-core forward passes between its two kernels, in the input type: the
/// scores A16 [B*T, H, C], qd = q~ . e^{g_cum} and kd = k . e^{gl - g_cum} (q's shape); and the
/// chunks' decays e^{gl} [NC, H, G], fp32.
struct TcScratch {
  void *A16 = nullptr, *qd = nullptr, *kd = nullptr;
  float *decay = nullptr;
  // a scalar gate's forward: e^{g_cum} and e^{gl - g_cum} of each row [B*T, H], fp32, for the
  // sequential kernel's TcStatePass::row_up (qd and kd then null)
  float *row_up = nullptr, *row_to_end = nullptr;
};
/// The scores kernel of the tensor-core path (gpu/chunk_gla_tc.cu), every chunk at once:
/// g_cum, the scores and the decayed factors into `scratch`; A (the scores in fp32) and g_cum
/// optional outputs.
void launch_chunk_gla_scores_tc(const void *q, const void *k, const float *g,
                                const TcScratch &scratch, float *A, float *g_cum,
                                const DeviceChunkTable &t, const ChunkDims &d);
/// The tensor-core backward of every chunk (gpu/chunk_gla_bwd_tc.cu): dq, dk, dv (the input
/// type) and dG = q . dq - k . dk [B*T, H, G] (fp32, as launch_chunk_bwd_dqkv's; summed over the
/// keys for a scalar gate), from q, k, v, g, dO, the
/// scores and kd of the scores kernel (`scratch`), the states at each chunk's start h16 and the
/// state gradients after each chunk dh16 [NC, H, K, V] (the input type).
void launch_chunk_gla_bwd_tc(const void *q, const void *k, const void *v, const float *g,
                             const void *d_o, const TcScratch &scratch, const void *h16,
                             const void *dh16, void *dq, void *dk, void *dv, float *dG,
                             const DeviceChunkTable &t, const ChunkDims &d);
/// The tensor-core path's dg (gpu/chunk_gla_bwd_tc.cu): launch_chunk_bwd_dg's sums, parallel over
/// chunks, from dG [B*T, H, G] (a scalar gate's already summed over the keys); chunk_sums a
/// workspace of 2 NC H G floats.
void launch_chunk_gla_bwd_dg_tc(const float *dG, const float *ht, const float *dht, float *dg,
                                float *chunk_sums, const DeviceChunkTable &t, const ChunkDims &d);
/// dg = the reverse cumulative sum of dG over each sequence, with rowsum(ht . dht) added at
/// its last row (ht, dht optional: both or neither); summed over keys when G == 1. dG is
/// overwritten.
void launch_chunk_bwd_dg(float *dG, const float *ht, const float *dht, float *dg,
                         const DeviceChunkTable &t, const ChunkDims &d);

} // namespace ruleproof::gpu::detail
