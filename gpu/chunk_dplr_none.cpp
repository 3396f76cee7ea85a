// ruleproof: the dplr kernel launchers where the project was built without nvcc: each throws.
#include <stdexcept>
#include <string>

#include "detail/dplr_launch.hpp"

namespace ruleproof::gpu::detail {

namespace {
[[noreturn]] void no_cuda(const char *kernel) {
  throw std::runtime_error(
      std::string(kernel) +
      ": ruleproof was built without its CUDA kernels (no nvcc, or RULEPROOF_CUDA=OFF)");
}
} // namespace

void launch_chunk_dplr_fwd_wy(const void *, const void *, const void *, const void *, const void *,
                              const float *, float *, float *, float *, float *, float *, float *,
                              float *, const DeviceChunkTable &, const ChunkDims &) {
  no_cuda("chunk_dplr_fwd_wy_kernel");
}
void launch_chunk_dplr_fwd_h(const void *, const void *, const void *, const float *, const float *,
                             const float *, const float *, float *, float *, float *,
                             const DeviceChunkTable &, const ChunkDims &) {
  no_cuda("chunk_dplr_fwd_h_kernel");
}
void launch_chunk_dplr_fwd_o(const void *, const void *, const float *, const float *,
                             const float *, const float *, const float *, void *,
                             const DeviceChunkTable &, const ChunkDims &) {
  no_cuda("chunk_dplr_fwd_o_kernel");
}
void launch_chunk_dplr_bwd_wy(const void *, const void *, const float *, const float *,
                              const float *, const float *, const float *, float *, float *,
                              float *, const DeviceChunkTable &, const ChunkDims &) {
  no_cuda("chunk_dplr_bwd_wy_kernel");
}
void launch_chunk_dplr_bwd_dqk(const void *, const void *, const void *, const void *, const void *,
                               const float *, const float *, const float *, const float *,
                               const float *, const float *, const float *, const void *,
                               const float *, const float *, const float *, const float *, void *,
                               void *, void *, void *, void *, float *, float *,
                               const DeviceChunkTable &, const ChunkDims &) {
  no_cuda("chunk_dplr_bwd_dqk_kernel");
}

void launch_chunk_dplr_wy_tc(const void *, const void *, const void *, const void *, const void *,
                             const float *, const DplrTcScratch &, const DplrTcStages &,
                             const DeviceChunkTable &, const ChunkDims &) {
  no_cuda("chunk_dplr_wy_tc_kernel");
}
void launch_chunk_dplr_fwd_o_tc(const void *, const DplrTcScratch &, const void *, const void *,
                                void *, const DeviceChunkTable &, const ChunkDims &) {
  no_cuda("chunk_dplr_fwd_o_tc_kernel");
}

void launch_chunk_dplr_bwd_wy_tc(const void *, const void *, const DplrTcBackward &, void *,
                                 const DplrTcTerms &, const DeviceChunkTable &, const ChunkDims &) {
  no_cuda("chunk_dplr_bwd_wy_tc_kernel");
}
void launch_chunk_dplr_bwd_dqk_tc(const void *, const void *, const void *, const void *,
                                  const float *, const DplrTcTerms &, void *, void *, void *,
                                  void *, float *, const DeviceChunkTable &, const ChunkDims &) {
  no_cuda("chunk_dplr_bwd_dqk_tc_kernel");
}

} // namespace ruleproof::gpu::detail
