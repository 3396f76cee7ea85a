// ruleproof: tma_rows_k_major_kernel, the copy of a 64 x 128 tile by the Tensor Memory Accelerator
// into wgmma's K-major layout (gpu/detail/tma.cuh, copy_rows_k_major), by one thread or by the
// first lane of each of several warps, a share of the boxes each, as the fused forward issues its
// keys (gpu/chunk_delta_fused_tc.cu), or as one box by one instruction (copy_tile_k_major, as the
// held forward copied its tiles before they were swizzled), or in 128-byte-swizzled panels as one
// box (tma_tile_swizzled_kernel, copy_tile_swizzled, as gpu/chunk_delta_held_tc.cu copies them);
// and such panels stored to a tile of a global array by one instruction
// (tma_store_swizzled_kernel, store_tile_swizzled, as the held forward stores o). CPU reference:
// the layouts written out in gpu/tests/tma_tests.cpp and gpu/tests/tile_layouts.hpp.
#include "gpu/tests/tma_copy.hpp"

#include <cuda_runtime.h>

#include <stdexcept>

#include "gpu/detail/chunk_device.cuh" // check
#include "gpu/detail/memory.hpp"       // DeviceBytes, device_copy_of, host_copy_of
#include "gpu/detail/tma.cuh"
#include "gpu/detail/wgmma.cuh" // fence_shared_for_async

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

__global__ void __launch_bounds__(128)
    tma_store_swizzled_kernel(const __grid_constant__ CUtensorMap map, int row0, int column0,
                              const std::uint16_t *panels) {
  __shared__ __align__(1024) std::uint16_t tile[TMA_ROWS * TMA_K];
  for (int e = threadIdx.x; e < TMA_ROWS * TMA_K; e += blockDim.x)
    tile[e] = panels[e];
  wgmma::fence_shared_for_async(); // the plain stores seen by the copy's proxy
  __syncthreads();
  if (threadIdx.x == 0) {
    tma::store_tile_swizzled(map, column0, row0, tile);
    tma::commit_stores();
    tma::wait_stores<0>();
  }
}

/// `src` on the device, an array of `out_values` zeros beside it, `launch(d_src, d_out)` launched
/// (a kernel that reads the one, through a tensor map or not, and writes the other: the tile as it
/// lay in shared memory, or the array a store wrote into), and d_out read back. The device memory
/// is freed on every path (DeviceBytes).
template <class Launch>
std::vector<std::uint16_t> read_back(const std::vector<std::uint16_t> &src, std::size_t out_values,
                                     Launch launch) {
  const DeviceBytes d_src = device_copy_of(src), d_out(out_values * 2);
  device_fill_bytes(d_out.get(), 0, out_values * 2);
  launch(d_src.as<const std::uint16_t>(), d_out.as<std::uint16_t>());
  check("tma copy test kernel");
  return host_copy_of<std::uint16_t>(d_out, out_values);
}

constexpr std::size_t TILE_VALUES = static_cast<std::size_t>(TMA_ROWS) * TMA_K;

} // namespace

std::vector<std::uint16_t> tma_rows_k_major(const std::vector<std::uint16_t> &src, int rows,
                                            int columns, int row0, int column0, int issuers) {
  if (src.size() != static_cast<std::size_t>(rows) * columns)
    throw std::invalid_argument("tma_rows_k_major: src is not rows x columns");
  if (issuers < 0 || issuers > 4)
    throw std::invalid_argument("tma_rows_k_major: 0 to 4 issuers (the block's warps)");
  return read_back(src, TILE_VALUES, [&](const std::uint16_t *d_src, std::uint16_t *d_out) {
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
  return read_back(src, TILE_VALUES, [&](const std::uint16_t *d_src, std::uint16_t *d_out) {
    const CUtensorMap map =
        tma::encode_swizzled_tiles_map(d_src, rows, columns, columns, TMA_ROWS, TMA_K, false);
    tma_tile_swizzled_kernel<<<1, 128>>>(map, row0, column0, d_out);
  });
}

std::vector<std::uint16_t> tma_store_swizzled(const std::vector<std::uint16_t> &panels, int rows,
                                              int columns, int row0, int column0) {
  if (panels.size() != TILE_VALUES || columns % 64 || column0 % 64 || row0 < 0 || row0 >= rows ||
      column0 < 0 || column0 + TMA_K > columns)
    throw std::invalid_argument(
        "tma_store_swizzled: a 64 x 128 tile of whole panels, starting inside the array");
  return read_back(panels, static_cast<std::size_t>(rows) * columns,
                   [&](const std::uint16_t *d_panels, std::uint16_t *d_out) {
                     const CUtensorMap map = tma::encode_swizzled_tiles_map(
                         d_out, rows, columns, columns, TMA_ROWS, TMA_K, false);
                     tma_store_swizzled_kernel<<<1, 128>>>(map, row0, column0, d_panels);
                   });
}

} // namespace ruleproof::gpu::test
