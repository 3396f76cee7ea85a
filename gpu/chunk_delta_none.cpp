// ruleproof: the delta-rule kernel launchers where the project was built without nvcc: each
// throws.
#include <stdexcept>
#include <string>

#include "detail/delta_launch.hpp"

namespace ruleproof::gpu::detail {

namespace {
[[noreturn]] void no_cuda(const char *kernel) {
  throw std::runtime_error(
      std::string(kernel) +
      ": ruleproof was built without its CUDA kernels (no nvcc, or RULEPROOF_CUDA=OFF)");
}
} // namespace

void launch_chunk_wy_fwd(const void *, const void *, const float *, const float *, float *, float *,
                         float *, float *, const DeviceChunkTable &, const ChunkDims &) {
  no_cuda("chunk_wy_fwd_kernel");
}
void launch_chunk_delta_fwd_h(const void *, const float *, const float *, const float *,
                              const float *, float *, float *, float *, const DeviceChunkTable &,
                              const ChunkDims &) {
  no_cuda("chunk_delta_fwd_h_kernel");
}
void launch_chunk_delta_fwd_o(const void *, const void *, const float *, const float *,
                              const float *, void *, const DeviceChunkTable &, const ChunkDims &) {
  no_cuda("chunk_fwd_o_kernel");
}
void launch_chunk_bwd_dv_local(const void *, const void *, const float *, const void *, float *,
                               const DeviceChunkTable &, const ChunkDims &) {
  no_cuda("chunk_bwd_dv_local_kernel");
}
void launch_chunk_bwd_dhu(const void *, const void *, const float *, const float *, const void *,
                          const float *, float *, float *, float *, const DeviceChunkTable &,
                          const ChunkDims &) {
  no_cuda("chunk_bwd_dhu_kernel");
}
void launch_chunk_bwd_dqkwg(const void *, const void *, const float *, const float *, const float *,
                            const void *, const float *, const float *, void *, float *, float *,
                            float *, const DeviceChunkTable &, const ChunkDims &) {
  no_cuda("chunk_bwd_dqkwg_kernel");
}
void launch_chunk_wy_bwd(const void *, const void *, const float *, const float *, const float *,
                         const float *, const float *, const float *, void *, void *, float *,
                         float *, const DeviceChunkTable &, const ChunkDims &) {
  no_cuda("chunk_wy_bwd_kernel");
}
void launch_chunk_local_cumsum_reverse(float *, float *, const DeviceChunkTable &,
                                       const ChunkDims &) {
  no_cuda("chunk_local_cumsum_reverse_kernel");
}

void launch_chunk_delta_wy_tc(const void *, const void *, const void *, const float *,
                              const float *, const DeltaTcScratch &, const DeltaTcStages &,
                              const DeviceChunkTable &, const ChunkDims &) {
  no_cuda("chunk_delta_wy_tc_kernel");
}
void launch_chunk_delta_wy_from_a_tc(const void *, const void *, const void *, const float *,
                                     const float *, const void *, const DeltaTcScratch &,
                                     const DeviceChunkTable &, const ChunkDims &) {
  no_cuda("chunk_delta_wy_from_a_tc_kernel");
}
void launch_chunk_delta_bwd_tc(const void *, const void *, const void *, const float *,
                               const float *, const void *, const DeltaTcBackward &, void *, void *,
                               void *, float *, float *, const DeviceChunkTable &,
                               const ChunkDims &) {
  no_cuda("chunk_delta_bwd_tc_kernel");
}
bool runs_sm90a() { return false; }
void launch_chunk_delta_a_tc(const void *, const float *, const float *, void *,
                             const DeviceChunkTable &, const ChunkDims &) {
  no_cuda("chunk_delta_a_tc_kernel");
}
void launch_chunk_delta_fused_tc(const DeltaFusedPass &, const DeviceChunkTable &,
                                 const ChunkDims &, bool) {
  no_cuda("chunk_delta_fused_tc_kernel");
}
void launch_chunk_delta_fused_states_tc(const DeltaFusedPass &, const DeviceChunkTable &,
                                        const ChunkDims &) {
  no_cuda("chunk_delta_fused_tc_kernel");
}
void launch_chunk_gla_fused_tc(const DeltaFusedPass &, const DeviceChunkTable &,
                               const ChunkDims &) {
  no_cuda("chunk_delta_fused_tc_kernel");
}
void launch_chunk_delta_held_tc(const DeltaFusedPass &, const DeviceChunkTable &,
                                const ChunkDims &) {
  no_cuda("chunk_delta_held_tc_kernel");
}
void launch_chunk_gla_held_tc(const DeltaFusedPass &, const DeviceChunkTable &, const ChunkDims &) {
  no_cuda("chunk_delta_held_tc_kernel");
}

} // namespace ruleproof::gpu::detail
