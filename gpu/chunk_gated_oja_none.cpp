// ruleproof: the gated_oja kernel launchers where the project was built without nvcc: each
// throws.
#include <stdexcept>
#include <string>

#include "detail/gated_oja_launch.hpp"

namespace ruleproof::gpu::detail {

namespace {
[[noreturn]] void no_cuda(const char *kernel) {
  throw std::runtime_error(
      std::string(kernel) +
      ": ruleproof was built without its CUDA kernels (no nvcc, or RULEPROOF_CUDA=OFF)");
}
} // namespace

void launch_chunk_oja_fwd_o(const void *, const void *, const float *, const float *, const float *,
                            void *, const DeviceChunkTable &, const ChunkDims &) {
  no_cuda("chunk_oja_fwd_o_kernel");
}
void launch_chunk_oja_fwd_o_tc(const void *, const void *, const void *, const void *,
                               const float *, void *, const DeviceChunkTable &, const ChunkDims &) {
  no_cuda("chunk_oja_fwd_o_tc_kernel");
}
void launch_transpose_states(const float *, float *, int, int, int, int) {
  no_cuda("transpose_states_kernel");
}

} // namespace ruleproof::gpu::detail
