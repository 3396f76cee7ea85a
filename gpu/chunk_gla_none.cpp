// ruleproof: the GLA kernel launchers where the project was built without nvcc: each throws.
#include <stdexcept>
#include <string>

#include "detail/gla_launch.hpp"

namespace ruleproof::gpu::detail {

namespace {
[[noreturn]] void no_cuda(const char *kernel) {
  throw std::runtime_error(
      std::string(kernel) +
      ": ruleproof was built without its CUDA kernels (no nvcc, or RULEPROOF_CUDA=OFF)");
}
} // namespace

void launch_chunk_local_cumsum(const float *, float *, const DeviceChunkTable &,
                               const ChunkDims &) {
  no_cuda("chunk_local_cumsum_kernel");
}
void launch_chunk_fwd_h(const void *, const void *, const float *, const float *, float *, float *,
                        const DeviceChunkTable &, const ChunkDims &) {
  no_cuda("chunk_fwd_h_kernel");
}
void launch_chunk_fwd_o(const void *, const void *, const void *, const float *, const float *,
                        void *, float *, const DeviceChunkTable &, const ChunkDims &) {
  no_cuda("chunk_fwd_o_kernel");
}
void launch_chunk_bwd_dh(const void *, const void *, const float *, const float *, float *, float *,
                         const DeviceChunkTable &, const ChunkDims &) {
  no_cuda("chunk_bwd_dh_kernel");
}
void launch_chunk_bwd_dqkv(const void *, const void *, const void *, const float *, const float *,
                           const void *, const float *, void *, void *, void *, float *,
                           const DeviceChunkTable &, const ChunkDims &) {
  no_cuda("chunk_bwd_dqkv_kernel");
}
void launch_chunk_gla_scores_tc(const void *, const void *, const float *, const TcScratch &,
                                float *, float *, const DeviceChunkTable &, const ChunkDims &) {
  no_cuda("chunk_gla_scores_tc_kernel");
}
void launch_chunk_gla_state_tc(const TcStatePass &, const DeviceChunkTable &, const ChunkDims &) {
  no_cuda("chunk_gla_state_tc_kernel");
}
void launch_chunk_gla_bwd_tc(const void *, const void *, const void *, const float *, const void *,
                             const TcScratch &, const void *, const void *, void *, void *, void *,
                             float *, const DeviceChunkTable &, const ChunkDims &) {
  no_cuda("chunk_gla_bwd_tc_kernel");
}
void launch_chunk_gla_bwd_dg_tc(const float *, const float *, const float *, float *, float *,
                                const DeviceChunkTable &, const ChunkDims &) {
  no_cuda("chunk_dg_totals_kernel");
}
void launch_chunk_bwd_dg(float *, const float *, const float *, float *, const DeviceChunkTable &,
                         const ChunkDims &) {
  no_cuda("chunk_bwd_dg_kernel");
}

} // namespace ruleproof::gpu::detail
