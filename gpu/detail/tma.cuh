// ruleproof: the Tensor Memory Accelerator (cp.async.bulk.tensor, sm_90): a tile copied from
// global to shared memory by one instruction of one thread, its arrival counted in bytes on an
// mbarrier. The kernels copy their tiles with cp.async, 16 bytes a thread (gpu/detail/mma.cuh);
// in the fused forward (gpu/chunk_delta_fused_tc.cu) issuing those copies is the longest phase of
// the step that sets its pace (reports/gpu/tensor_core.md). Its test is gpu/tests/tma_tests.cpp.
//
// A tile of 64 rows of K 16-bit values, row r at src + r * stride, lands in wgmma's K-major
// core-matrix layout (gpu/detail/wgmma.cuh, k_major_at<64>) as K / 8 boxes of 8 values by 64 rows
// of a two-dimensional tensor map (encode_rows_map): box j, columns [8 j, 8 j + 8), is the run of
// 64 core-matrix rows at j * 64 * 8 values, which is that layout. Or as one box of a
// three-dimensional map (encode_tiles_map: the 8 values of a row's column group, the rows, the
// column groups 16 bytes apart), by one instruction (copy_tile_k_major): issuing 48 boxes of the
// first kind a chunk had taken a quarter of the held forward's step. Both take 16 bytes a row from
// L2, in sectors of 32. The held forward (gpu/chunk_delta_held_tc.cu) copies its tiles in
// 128-byte-swizzled panels instead (wgmma::swizzled_at), one box of a three-dimensional map a tile
// (encode_swizzled_tiles_map, copy_tile_swizzled), each box row a whole 128 bytes. Rows past the
// tensor map's last row arrive as zeros. It stores its output the other way, a swizzled tile of
// shared memory to global memory by one instruction (store_tile_swizzled, commit_stores,
// wait_stores_read, wait_stores), rows past the map's last row left out.
#pragma once

#include <cuda.h> // CUtensorMap and its enums (types only: the encoder comes from the runtime)
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "gpu/detail/mma.cuh" // shared_address

namespace ruleproof::gpu::detail::tma {

/// A tensor map of 16-bit values, without swizzle or with the 128-byte swizzle (dims, strides in
/// bytes, box and steps as the driver's encoder takes them, innermost first); throws on an error.
inline CUtensorMap encode_map(const void *base, unsigned rank, const cuuint64_t *dims,
                              const cuuint64_t *strides, const cuuint32_t *box,
                              const cuuint32_t *steps, bool fp16, bool swizzled = false) {
  // the driver's encoder, looked up on the first call (null where the driver has none)
  static void *const encode = [] {
    void *entry = nullptr;
    cudaDriverEntryPointQueryResult found{};
    const bool ok = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &entry, 12000,
                                                     cudaEnableDefault, &found) == cudaSuccess &&
                    found == cudaDriverEntryPointSuccess;
    return ok ? entry : nullptr;
  }();
  if (!encode)
    throw std::runtime_error("tma: the driver has no cuTensorMapEncodeTiled");
  CUtensorMap map{};
  const CUresult r = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(encode)(
      &map, fp16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, rank,
      const_cast<void *>(base), dims, strides, box, steps, CU_TENSOR_MAP_INTERLEAVE_NONE,
      swizzled ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE,
      CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw std::runtime_error("tma: cuTensorMapEncodeTiled failed with CUresult " +
                             std::to_string(static_cast<int>(r)));
  return map;
}

/// \brief The tensor map of a [rows, columns] array of 16-bit values (row stride `stride`
/// values, a multiple of 8; base 16-byte aligned), read in boxes of 8 columns by `box_rows`
/// rows. Rows past `rows` and columns past `columns` arrive as zeros. Throws on an error.
inline CUtensorMap encode_rows_map(const void *base, std::uint64_t rows, std::uint64_t columns,
                                   std::uint64_t stride, std::uint32_t box_rows, bool fp16) {
  const cuuint64_t dims[2] = {columns, rows}, strides[1] = {stride * 2};
  const cuuint32_t box[2] = {8, box_rows}, steps[2] = {1, 1};
  return encode_map(base, 2, dims, strides, box, steps, fp16);
}

/// \brief The tensor map of the same array read as whole tiles of `box_rows` rows by `box_columns`
/// columns in the K-major core-matrix layout, one copy a tile (copy_tile_k_major): three
/// dimensions, the 8 values of a row's column group, the rows, the column groups (`stride` values
/// and 16 bytes apart), so that a box lands its column groups one after another, each its rows of
/// 16 bytes, which is that layout (k_major_at of gpu/detail/wgmma.cuh). Rows past `rows` arrive as
/// zeros. Throws on an error.
inline CUtensorMap encode_tiles_map(const void *base, std::uint64_t rows, std::uint64_t columns,
                                    std::uint64_t stride, std::uint32_t box_rows,
                                    std::uint32_t box_columns, bool fp16) {
  const cuuint64_t dims[3] = {8, rows, columns / 8}, strides[2] = {stride * 2, 16};
  const cuuint32_t box[3] = {8, box_rows, box_columns / 8}, steps[3] = {1, 1, 1};
  return encode_map(base, 3, dims, strides, box, steps, fp16);
}

/// \brief The tensor map of the same array read as whole tiles of `box_rows` rows by
/// `box_columns` columns (a multiple of 64) in 128-byte-swizzled panels (wgmma::swizzled_at), one
/// copy a tile (copy_tile_swizzled): three dimensions, the 64 values of a row's panel, the rows,
/// the panels (`stride` values and 128 bytes apart), each box row a whole 128 bytes, as L2 serves
/// them. Rows past `rows` arrive as zeros. Throws on an error.
inline CUtensorMap encode_swizzled_tiles_map(const void *base, std::uint64_t rows,
                                             std::uint64_t columns, std::uint64_t stride,
                                             std::uint32_t box_rows, std::uint32_t box_columns,
                                             bool fp16) {
  const cuuint64_t dims[3] = {64, rows, columns / 64}, strides[2] = {stride * 2, 128};
  const cuuint32_t box[3] = {64, box_rows, box_columns / 64}, steps[3] = {1, 1, 1};
  return encode_map(base, 3, dims, strides, box, steps, fp16, true);
}

/// An mbarrier in shared memory that `count` threads arrive at once a phase.
__device__ inline void init_barrier(std::uint64_t *barrier, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(mma::shared_address(barrier)),
               "r"(count)
               : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
/// This thread arrives, and the phase also waits for `bytes` of copies to land.
__device__ inline void arrive_expecting(std::uint64_t *barrier, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(
                   mma::shared_address(barrier)),
               "r"(bytes)
               : "memory");
}
/// This thread arrives, its reads and writes before it seen by the threads that wait for the
/// phase.
__device__ inline void arrive(std::uint64_t *barrier) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(mma::shared_address(barrier))
               : "memory");
}
/// Waits until the phase of parity `parity` is complete.
__device__ inline void wait_barrier(std::uint64_t *barrier, unsigned parity) {
  std::uint32_t done = 0;
  while (!done)
    asm volatile("{\n.reg .pred p;\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                 "selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done)
                 : "r"(mma::shared_address(barrier)), "r"(parity)
                 : "memory");
}

/// Starts the copy of the box at (column, row) of `map` to dst (128-byte aligned), its bytes
/// counted on `barrier`.
__device__ inline void copy_box(void *dst, const CUtensorMap &map, int column, int row,
                                std::uint64_t *barrier) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(mma::shared_address(dst)),
               "l"(reinterpret_cast<std::uint64_t>(&map)), "r"(column), "r"(row),
               "r"(mma::shared_address(barrier))
               : "memory");
}

/// Starts the copy of the box at coordinates (x, y, z) of a three-dimensional `map` to dst, its
/// bytes counted on `barrier`.
__device__ inline void copy_box_3d(void *dst, const CUtensorMap &map, int x, int y, int z,
                                   std::uint64_t *barrier) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(mma::shared_address(dst)),
               "l"(reinterpret_cast<std::uint64_t>(&map)), "r"(x), "r"(y), "r"(z),
               "r"(mma::shared_address(barrier))
               : "memory");
}

/// Starts the copy of the tile at rows [row, ..) and columns [column, ..) (a multiple of 8) of
/// `map` (encode_tiles_map's) into dst (128-byte aligned) in the K-major core-matrix layout, one
/// instruction, its bytes counted on `barrier`.
__device__ inline void copy_tile_k_major(void *dst, const CUtensorMap &map, int column, int row,
                                         std::uint64_t *barrier) {
  copy_box_3d(dst, map, 0, row, column / 8, barrier);
}

/// Starts the copy of the tile at rows [row, ..) and columns [column, ..) (a multiple of 64) of
/// `map` (encode_swizzled_tiles_map's) into dst (1024-byte aligned) in 128-byte-swizzled panels,
/// one instruction, its bytes counted on `barrier`.
__device__ inline void copy_tile_swizzled(void *dst, const CUtensorMap &map, int column, int row,
                                          std::uint64_t *barrier) {
  copy_box_3d(dst, map, 0, row, column / 64, barrier);
}

/// Starts the store of the tile at src (1024-byte aligned, 128-byte-swizzled panels) to rows
/// [row, ..) and columns [column, ..) (a multiple of 64) of `map` (encode_swizzled_tiles_map's),
/// one instruction, in this thread's group of stores (commit_stores). Make the tile's writes
/// visible to the copy first (wgmma::fence_shared_for_async, then a barrier of the writers).
__device__ inline void store_tile_swizzled(const CUtensorMap &map, int column, int row,
                                           const void *src) {
  asm volatile(
      "cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%1, %2, %3}], [%4];\n" ::"l"(
          reinterpret_cast<std::uint64_t>(&map)),
      "r"(0), "r"(row), "r"(column / 64), "r"(mma::shared_address(src))
      : "memory");
}
/// Closes this thread's group of stores issued so far.
__device__ inline void commit_stores() {
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}
/// Waits until at most N of this thread's groups of stores still read their shared memory.
template <int N> __device__ inline void wait_stores_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}
/// Waits until at most N of this thread's groups of stores are still running.
template <int N> __device__ inline void wait_stores() {
  asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
}

/// Starts the copy of rows [row, row + 64) and columns [column, column + K) of `map` (boxes of 8
/// columns by 64 rows) into dst in the K-major core-matrix layout of 64 rows, K / 8 boxes, by the
/// calling thread alone, or its share of the boxes (part of parts: boxes part, part + parts, ...)
/// where several threads issue them; their bytes counted on `barrier`.
template <int K>
__device__ inline void copy_rows_k_major(void *dst, const CUtensorMap &map, int column, int row,
                                         std::uint64_t *barrier, int part = 0, int parts = 1) {
#pragma unroll 1
  for (int j = part; j < K / 8; j += parts)
    copy_box(static_cast<char *>(dst) + j * 64 * 16, map, column + 8 * j, row, barrier);
}

} // namespace ruleproof::gpu::detail::tma
