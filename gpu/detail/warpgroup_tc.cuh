// ruleproof: device helpers shared by the warpgroup-MMA kernels (sm_90a):
// gpu/chunk_delta_fused_tc.cu and gpu/chunk_delta_held_tc.cu. A 64 x 64 product issued over a depth
// of 16-deep steps, a chunk's gates at a thread's entries of a 64 x 64 accumulator, a tile's
// pieces of 16 bytes as a warpgroup moves them or zeroes the rows past a sequence's end (in the
// core-matrix layout or in 128-byte-swizzled panels), and an accumulator stored transposed into a
// swizzled panel.
#pragma once

#include "gpu/detail/gla_tc.cuh" // fast_exp
#include "gpu/detail/wgmma.cuh"

namespace ruleproof::gpu::detail::warpgroup {

using tc::fast_exp;

constexpr int SIZE = 128; // threads of a warpgroup

/// Row and first column of piece e (8 values, 16 bytes) of a tile of ROWS rows as a warpgroup
/// moves it (copy_tile, store_tile): a warp's 32 pieces are 4 rows by 8 neighbouring pieces, so
/// that in memory it reaches 4 whole rows of 128 bytes (at 64 columns), and each quarter of it (4
/// rows of two pieces) is two runs of 64 contiguous bytes of shared memory (two passes).
struct TilePiece {
  int r, c0;
};
template <int ROWS> __device__ inline TilePiece tile_piece(int e) {
  const int group = e / 32;
  return {(group % (ROWS / 4)) * 4 + e % 4, ((group / (ROWS / 4)) * 8 + (e / 4) % 8) * 8};
}

/// Zeroes rows [valid, ROWS) of a tile of ROWS x COLS 16-bit values held in the core-matrix
/// layout (the rows a copy by the Tensor Memory Accelerator brings from past a sequence's end,
/// where copy_tile writes zeros); by one warpgroup (tid its place), a thread 16 bytes at a time.
template <int ROWS, int COLS, class T> __device__ void zero_rows_past(T *tile, int valid, int tid) {
  static_assert(ROWS % 4 == 0 && COLS % 64 == 0, "whole groups of 4 rows by 8 pieces");
#pragma unroll 1
  for (int e = tid; valid < ROWS && e < ROWS * (COLS / 8); e += SIZE) {
    const TilePiece x = tile_piece<ROWS>(e);
    if (x.r >= valid)
      *reinterpret_cast<uint4 *>(&tile[wgmma::k_major_at<ROWS>(x.r, x.c0)]) = uint4{0, 0, 0, 0};
  }
}

/// Zeroes rows [valid, ROWS) of a tile of ROWS x COLS 16-bit values held in 128-byte-swizzled
/// panels (wgmma::swizzled_at: a panel's row is 128 contiguous bytes, however its pieces are
/// permuted); by one warpgroup (tid its place), a thread 16 bytes at a time.
template <int ROWS, int COLS, class T>
__device__ void zero_rows_past_swizzled(T *tile, int valid, int tid) {
  static_assert(COLS % 64 == 0, "whole panels of 64 columns");
#pragma unroll 1
  for (int e = tid; valid < ROWS && e < ROWS * (COLS / 8); e += SIZE) {
    const int panel = e / (ROWS * 8), r = (e / 8) % ROWS;
    if (r >= valid)
      *reinterpret_cast<uint4 *>(&tile[(panel * ROWS + r) * 64 + (e % 8) * 8]) = uint4{0, 0, 0, 0};
  }
}

/// Stores D^T, the transpose of a warpgroup's 64 x 64 accumulator d (wgmma's layout: entry e at
/// row d_row(e), column d_col(e)), rounded to T, into a tile of 64 rows by 64 columns held in one
/// 128-byte-swizzled panel: D(i, j) to the tile's row j, column i (wgmma::swizzled_at<64>(j, i)).
/// Each warp stores its 16 rows of D by stmatrix .trans (wgmma::store_transposed_x4), four 8 x 8
/// matrices a step: matrix m of step t holds D's rows 16 w + 8 (m % 2).. and columns
/// 8 (2 t + m / 2).., entries e = 8 t + 2 m and e + 1, and lane l points at row l % 8 of matrix
/// l / 8 as it is stored. tid: the thread's place in the warpgroup.
template <class T>
__device__ inline void store_transposed_swizzled(T *tile, const float (&d)[32], int tid) {
  std::uint32_t pairs[16]; // entries e, e + 1: one row of D, two neighbouring columns
#pragma unroll
  for (int e = 0; e < 32; e += 2)
    pairs[e / 2] = mma::pack_rounded<T>(d[e], d[e + 1]);
  const int lane = tid % 32, warp = tid / 32, j = lane / 8;
#pragma unroll
  for (int t = 0; t < 4; ++t)
    wgmma::store_transposed_x4(
        tile + wgmma::swizzled_at<64>(8 * (2 * t + j / 2) + lane % 8, 16 * warp + 8 * (j % 2)),
        {pairs[4 * t], pairs[4 * t + 1], pairs[4 * t + 2], pairs[4 * t + 3]});
}

/// D (64 x 64) = sum over `steps` 16-deep steps of A B, issued (not waited for): a(k0) and b(k0)
/// the descriptors of step k0.
template <class T, bool B_MN, bool A_MN = false, class DescA, class DescB>
__device__ inline void issue_product(float (&d)[32], int depth, DescA a, DescB b, bool accumulate) {
#pragma unroll
  for (int k0 = 0; k0 < depth; k0 += 16)
    wgmma::m64n64k16<T, B_MN, A_MN>(d, a(k0), b(k0), accumulate || k0 > 0);
}

/// A chunk's g_cum at this thread's two rows and sixteen columns of a 64 x 64 accumulator, read
/// once: decay(e) = e^{g_cum_i - g_cum_j} of its entry e (one exp each).
struct AccGates {
  float row[2], col[8][2];
  __device__ explicit AccGates(const float *g_cum) {
    row[0] = g_cum[wgmma::d_row(0)];
    row[1] = g_cum[wgmma::d_row(2)];
#pragma unroll
    for (int t = 0; t < 8; ++t)
#pragma unroll
      for (int u = 0; u < 2; ++u)
        col[t][u] = g_cum[wgmma::d_col(4 * t + u)];
  }
  __device__ float decay(int e) const { return fast_exp(row[(e % 4) / 2] - col[e / 4][e % 2]); }
};

/// A chunk's g_cum by the 32 lanes of one warp, a scan over its pairs of rows: lane l takes rows
/// 2 l and 2 l + 1 of `g_raw` (rows past the chunk's end: gl's, their gates zero) and hands each
/// row i to row(i, g_cum_i, e^{g_cum_i}, e^{gl - g_cum_i}); returns gl, on every lane.
template <class Row>
__device__ inline float chunk_gate_scan(const float *g_raw, int lane, Row row) {
  const float g0 = g_raw[2 * lane], g1 = g_raw[2 * lane + 1];
  float sum = g0 + g1;
#pragma unroll
  for (int offset = 1; offset < 32; offset *= 2) {
    const float before = __shfl_up_sync(0xffffffffu, sum, offset);
    if (lane >= offset)
      sum += before;
  }
  const float gl = __shfl_sync(0xffffffffu, sum, 31);
  const float before = __shfl_up_sync(0xffffffffu, sum, 1); // the pairs before this one
  const float gi[2] = {(lane > 0 ? before : 0.0f) + g0, sum};
#pragma unroll
  for (int u = 0; u < 2; ++u)
    row(2 * lane + u, gi[u], expf(gi[u]), expf(gl - gi[u]));
  return gl;
}

} // namespace ruleproof::gpu::detail::warpgroup
