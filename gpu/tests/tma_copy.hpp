// ruleproof: a tile copied or stored by the Tensor Memory Accelerator (gpu/detail/tma.cuh), for
// its test (gpu/tests/tma_tests.cpp).
#pragma once

#include <cstdint>
#include <vector>

namespace ruleproof::gpu::test {

constexpr int TMA_ROWS = 64, TMA_K = 128;

/// Rows [row0, row0 + 64) and columns [column0, column0 + 128) of `src`, a [rows, columns] array
/// of 16-bit values (bf16 bits) stored by rows, copied by tma::copy_rows_k_major into shared
/// memory and read back as it lies there (64 * 128 values, wgmma's K-major core-matrix layout
/// when the copy is right), its boxes issued by the first lane of each of `issuers` warps (1 to
/// 4), a share each, or (issuers 0) the tile as one box of a three-dimensional tensor map by one
/// instruction (tma::encode_tiles_map, tma::copy_tile_k_major). Throws on a CUDA error.
std::vector<std::uint16_t> tma_rows_k_major(const std::vector<std::uint16_t> &src, int rows,
                                            int columns, int row0, int column0, int issuers = 1);

/// The same tile copied as one box of a three-dimensional tensor map with the 128-byte swizzle
/// (tma::encode_swizzled_tiles_map, tma::copy_tile_swizzled) and read back as it lies in shared
/// memory (two panels of 64 rows of 64 values, wgmma::swizzled_at, when the copy is right); the
/// tile's first column a multiple of 64. Throws on a CUDA error.
std::vector<std::uint16_t> tma_tile_swizzled(const std::vector<std::uint16_t> &src, int rows,
                                             int columns, int row0, int column0);

/// The 64 x 128 tile `panels`, as it lies in shared memory in 128-byte-swizzled panels, stored by
/// one instruction of the Tensor Memory Accelerator (tma::store_tile_swizzled, on
/// encode_swizzled_tiles_map's map) to rows [row0, row0 + 64) and columns [column0, column0 + 128)
/// of a [rows, columns] array of zeros, rows past `rows` left out, and the whole array read back;
/// column0 a multiple of 64. Throws on a CUDA error.
std::vector<std::uint16_t> tma_store_swizzled(const std::vector<std::uint16_t> &panels, int rows,
                                              int columns, int row0, int column0);

} // namespace ruleproof::gpu::test
