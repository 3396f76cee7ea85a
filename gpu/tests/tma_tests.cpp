// ruleproof: the Tensor Memory Accelerator's copy of a tile into wgmma's K-major core-matrix
// layout (gpu/detail/tma.cuh, copy_rows_k_major) against that layout written out
// (gpu/detail/wgmma.cuh: element (r, k) of a 64-row tile at ((k / 8) * 8 + r / 8) * 64 + (r % 8) *
// 8 + k % 8), bit for bit, rows past the array's end zero, by one thread and by a lane of each of
// four warps (a quarter of the boxes each, as the fused forward issues its keys); and the copy of a
// tile into 128-byte-swizzled panels (copy_tile_swizzled, wgmma.cuh's swizzled_at), against the
// permutation written out (gpu/tests/tile_layouts.hpp); and the store of such panels to a tile of
// a global array (store_tile_swizzled, as the held forward stores o), rows past the array's end
// left out; label `gpu` (skipped where no Hopper GPU is found, gpu_main.cpp). The same copy from
// columns moved by 8 must differ, and the swizzled copy and store from or to the unpermuted panels
// (the tests' failing sides).
#include <catch2/catch.hpp>

#include <cstdint>
#include <utility>
#include <vector>

#include "gpu/tests/tile_layouts.hpp"
#include "gpu/tests/tma_copy.hpp"

using ruleproof::gpu::test::swizzled_at;
using ruleproof::gpu::test::TMA_K;
using ruleproof::gpu::test::TMA_ROWS;
using ruleproof::gpu::test::tma_rows_k_major;
using ruleproof::gpu::test::unswizzled_at;

namespace {

/// Where element (r, k) of a 64-row tile lies in the K-major layout (wgmma.cuh, k_major_at<64>).
int k_major_at(int r, int k) {
  return ((k / 8) * (TMA_ROWS / 8) + r / 8) * 64 + (r % 8) * 8 + k % 8;
}

/// The tile the copy must give: rows [row0, row0 + 64), columns [column0, column0 + 128) of src
/// in the K-major layout, rows past `rows` zero.
std::vector<std::uint16_t> expected_tile(const std::vector<std::uint16_t> &src, int rows,
                                         int columns, int row0, int column0) {
  std::vector<std::uint16_t> tile(TMA_ROWS * TMA_K);
  for (int r = 0; r < TMA_ROWS; ++r)
    for (int k = 0; k < TMA_K; ++k)
      tile[k_major_at(r, k)] =
          row0 + r < rows ? src[static_cast<std::size_t>(row0 + r) * columns + column0 + k] : 0;
  return tile;
}

/// The source array of the tests: 150 rows of two heads of 128 values (as q [T, H, K] is), each
/// value its own bits (index + 1, never 0, so that a zero is a zero fill).
std::vector<std::uint16_t> numbered_rows(int rows, int columns) {
  std::vector<std::uint16_t> src(static_cast<std::size_t>(rows) * columns);
  for (std::size_t i = 0; i < src.size(); ++i)
    src[i] = static_cast<std::uint16_t>(i % 65535 + 1);
  return src;
}

} // namespace

TEST_CASE("tma_copies_rows_into_the_k_major_layout", "[gpu][tma]") {
  const int rows = 150, columns = 2 * TMA_K;
  const std::vector<std::uint16_t> src = numbered_rows(rows, columns);
  const std::pair<int, int> starts[] = {{0, 0}, {64, TMA_K}, {100, TMA_K}, {140, 0}};
  for (const int issuers : {0, 1, 4}) // (0: one box, one instruction)
    for (const auto &[row0, column0] : starts) {
      INFO("rows from " << row0 << ", columns from " << column0 << ", " << issuers
                        << " issuing threads");
      const std::vector<std::uint16_t> got =
          tma_rows_k_major(src, rows, columns, row0, column0, issuers);
      CHECK(got == expected_tile(src, rows, columns, row0, column0));
      // the failing side: the same copy from the columns 8 further on is not this tile
      if (column0 + TMA_K + 8 <= columns)
        CHECK(tma_rows_k_major(src, rows, columns, row0, column0 + 8, issuers) != got);
    }
}

TEST_CASE("tma_copies_a_tile_into_swizzled_panels", "[gpu][tma]") {
  const int rows = 150, columns = 2 * TMA_K;
  const std::vector<std::uint16_t> src = numbered_rows(rows, columns);
  const std::pair<int, int> starts[] = {{0, 0}, {64, TMA_K}, {100, TMA_K}, {140, 0}, {3, 64}};
  for (const auto &[row0, column0] : starts) {
    INFO("rows from " << row0 << ", columns from " << column0);
    std::vector<std::uint16_t> expected(TMA_ROWS * TMA_K), unswizzled(TMA_ROWS * TMA_K);
    for (int r = 0; r < TMA_ROWS; ++r)
      for (int k = 0; k < TMA_K; ++k) {
        const std::uint16_t x =
            row0 + r < rows ? src[static_cast<std::size_t>(row0 + r) * columns + column0 + k] : 0;
        expected[swizzled_at<TMA_ROWS>(r, k)] = x;
        unswizzled[unswizzled_at<TMA_ROWS>(r, k)] = x;
      }
    const std::vector<std::uint16_t> got =
        ruleproof::gpu::test::tma_tile_swizzled(src, rows, columns, row0, column0);
    CHECK(got == expected);
    // the failing side: the panels' rows as they lie in memory, unpermuted, are not this tile
    CHECK(got != unswizzled);
  }
}

TEST_CASE("tma_stores_swizzled_panels_as_a_tile", "[gpu][tma]") {
  const int rows = 150, columns = 2 * TMA_K;
  // the tile as it lies in shared memory, each value its own bits (never 0, the array's fill)
  std::vector<std::uint16_t> panels(TMA_ROWS * TMA_K);
  for (std::size_t i = 0; i < panels.size(); ++i)
    panels[i] = static_cast<std::uint16_t>(i + 1);
  const std::pair<int, int> starts[] = {{0, 0}, {64, TMA_K}, {100, TMA_K}, {140, 0}, {3, 64}};
  for (const auto &[row0, column0] : starts) {
    INFO("rows from " << row0 << ", columns from " << column0);
    // element (r, k) of the tile to row row0 + r, column column0 + k; none past the last row
    std::vector<std::uint16_t> expected(static_cast<std::size_t>(rows) * columns),
        unswizzled(expected.size());
    for (int r = 0; r < TMA_ROWS && row0 + r < rows; ++r)
      for (int k = 0; k < TMA_K; ++k) {
        const std::size_t at = static_cast<std::size_t>(row0 + r) * columns + column0 + k;
        expected[at] = panels[swizzled_at<TMA_ROWS>(r, k)];
        unswizzled[at] = panels[unswizzled_at<TMA_ROWS>(r, k)];
      }
    const std::vector<std::uint16_t> got =
        ruleproof::gpu::test::tma_store_swizzled(panels, rows, columns, row0, column0);
    CHECK(got == expected);
    // the failing side: the panels read as unpermuted rows are not what the store wrote
    CHECK(got != unswizzled);
  }
}
