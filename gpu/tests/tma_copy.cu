// ruleproof: tma_rows_k_major_kernel, the copy of a 64 x 128 tile by the Tensor Memory Accelerator
// into wgmma's K-major layout (gpu/detail/tma.cuh, copy_rows_k_major), by one thread or by the
// first lane of each of several warps, a share of the boxes each, as the fused forward issues its
// keys (gpu/chunk_delta_fused_tc.cu), or as one box by one instruction (copy_tile_k_major, as the
// held forward copied its tiles before they were swizzled), or in 128-byte-swizzled panels as one
// box (tma_tile_swizzled_kernel, copy_tile_swizzled, as gpu/chunk_delta_held_tc.cu copies them).
// CPU reference: the layouts written out in gpu/tests/tma_tests.cpp.
#include "gpu/tests/tma_copy.hpp"

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "gpu/detail/tma.cuh"

namespace ruleproof::gpu::test {

namespace {

using namespace detail;

__global__ void __launch_bounds__(128)
    tma_rows_k_major_kernel(const __grid_constant__ CUtensorMap map, int row0, int column0,
                            int issuers, std::uint16_t *out) {
  __shared__ __align__(128) std::uint16_t tile[TMA_ROWS * TMA_K];
  __shared__ __align__(8) std::uint64_t arrived;
  if (threadIdx.x == 0)
    tma::init_barrier(&arrived, 1);
  __syncthreads();
  const int part = threadIdx.x / 32;
  if (issuers == 0 && threadIdx.x == 0) { // the whole tile, one instruction
    tma::arrive_expecting(&arrived, sizeof(tile));
    tma::copy_tile_k_major(tile, map, column0, row0, &arrived);
  } else if (threadIdx.x % 32 == 0 && part < issuers) {
    if (part == 0) // the one arrival, expecting every box's bytes
      tma::arrive_expecting(&arrived, sizeof(tile));
    tma::copy_rows_k_major<TMA_K>(tile, map, column0, row0, &arrived, part, issuers);
  }
  tma::wait_barrier(&arrived, 0);
  for (int e = threadIdx.x; e < TMA_ROWS * TMA_K; e += blockDim.x)
    out[e] = tile[e];
}

__global__ void __launch_bounds__(128)
    tma_tile_swizzled_kernel(const __grid_constant__ CUtensorMap map, int row0, int column0,
                             std::uint16_t *out) {
  __shared__ __align__(1024) std::uint16_t tile[TMA_ROWS * TMA_K];
  __shared__ __align__(8) std::uint64_t arrived;
  if (threadIdx.x == 0) {
    tma::init_barrier(&arrived, 1);
    tma::arrive_expecting(&arrived, sizeof(tile));
    tma::copy_tile_swizzled(tile, map, column0, row0, &arrived);
  }
  __syncthreads();
  tma::wait_barrier(&arrived, 0);
  for (int e = threadIdx.x; e < TMA_ROWS * TMA_K; e += blockDim.x)
    out[e] = tile[e];
}

void cuda_ok(cudaError_t e, const char *what) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string("tma copy test: ") + what + ": " + cudaGetErrorString(e));
}

/// `src` on the device, `copy(d_src, d_out)` launched (a kernel that reads it through a tensor map
/// and writes the tile as it lay in shared memory to d_out), and that tile read back: TMA_ROWS x
/// TMA_K values. The device memory is freed on every path.
template <class Copy>
std::vector<std::uint16_t> tile_read_back(const std::vector<std::uint16_t> &src, Copy copy) {
  std::uint16_t *d_src = nullptr, *d_out = nullptr;
  const std::size_t out_values = static_cast<std::size_t>(TMA_ROWS) * TMA_K;
  std::vector<std::uint16_t> out(out_values);
  try {
    cuda_ok(cudaMalloc(&d_src, src.size() * 2), "cudaMalloc");
    cuda_ok(cudaMalloc(&d_out, out_values * 2), "cudaMalloc");
    cuda_ok(cudaMemcpy(d_src, src.data(), src.size() * 2, cudaMemcpyHostToDevice), "copy in");
    copy(d_src, d_out);
    cuda_ok(cudaGetLastError(), "launch");
    cuda_ok(cudaMemcpy(out.data(), d_out, out_values * 2, cudaMemcpyDeviceToHost), "copy out");
  } catch (...) {
    cudaFree(d_src);
    cudaFree(d_out);
    throw;
  }
  cudaFree(d_src);
  cudaFree(d_out);
  return out;
}

} // namespace

std::vector<std::uint16_t> tma_rows_k_major(const std::vector<std::uint16_t> &src, int rows,
                                            int columns, int row0, int column0, int issuers) {
  if (src.size() != static_cast<std::size_t>(rows) * columns)
    throw std::invalid_argument("tma_rows_k_major: src is not rows x columns");
  if (issuers < 0 || issuers > 4)
    throw std::invalid_argument("tma_rows_k_major: 0 to 4 issuers (the block's warps)");
  return tile_read_back(src, [&](const std::uint16_t *d_src, std::uint16_t *d_out) {
    const CUtensorMap map =
        issuers == 0 ? tma::encode_tiles_map(d_src, rows, columns, columns, TMA_ROWS, TMA_K, false)
                     : tma::encode_rows_map(d_src, rows, columns, columns, TMA_ROWS, false);
    tma_rows_k_major_kernel<<<1, 128>>>(map, row0, column0, issuers, d_out);
  });
}

std::vector<std::uint16_t> tma_tile_swizzled(const std::vector<std::uint16_t> &src, int rows,
                                             int columns, int row0, int column0) {
  if (src.size() != static_cast<std::size_t>(rows) * columns || columns % 64 || column0 % 64)
    throw std::invalid_argument("tma_tile_swizzled: src is not rows x columns of whole panels");
  return tile_read_back(src, [&](const std::uint16_t *d_src, std::uint16_t *d_out) {
    const CUtensorMap map =
        tma::encode_swizzled_tiles_map(d_src, rows, columns, columns, TMA_ROWS, TMA_K, false);
    tma_tile_swizzled_kernel<<<1, 128>>>(map, row0, column0, d_out);
  });
}

} // namespace ruleproof::gpu::test
