// ruleproof: one warpgroup's 64 x 64 x 128 product on wgmma (gpu/detail/wgmma.cuh), and its
// accumulator stored transposed into a swizzled panel, for their tests (gpu/tests/wgmma_tests.cpp).
#pragma once

#include <cstdint>
#include <vector>

namespace ruleproof::gpu::test {

constexpr int WGMMA_M = 64, WGMMA_N = 64, WGMMA_K = 128;

/// How the product reads its left and right factors, and whether its descriptors carry the core
/// matrices' two offsets each in the other's field (a deliberate error, which the test must see).
struct WgmmaLayout {
  bool b_mn_major = false;
  bool a_mn_major = false; ///< A held MN-major (its tile by columns, as k^T of the state's update)
  bool offsets_swapped = false;
  bool swizzled = false; ///< both tiles in 128-byte-swizzled panels (wgmma::swizzled_at)
  /// each tile's descriptor made once, at its first column, and moved to each step
  /// (wgmma::moved by k_major_offset, k_major_swizzled_offset or mn_major_swizzled_offset, as the
  /// held forward makes them); not for an MN-major tile without swizzle, which has no such offset
  bool moved = false;
};

/// D = A B^T on one warpgroup: A (64 x 128) and Bt (64 x 128) row-major, as the bits of 16-bit
/// values (fp16 if `fp16`, else bf16); D (64 x 64) row-major in fp32. Throws on a CUDA error.
std::vector<float> wgmma_tile_product(const std::vector<std::uint16_t> &a,
                                      const std::vector<std::uint16_t> &bt, bool fp16,
                                      WgmmaLayout layout);

/// D (64 x 64, row-major, fp32), held by one warpgroup in wgmma's accumulator layout, stored
/// transposed and rounded to the 16-bit type (fp16 if `fp16`, else bf16) into one 64 x 64
/// 128-byte-swizzled panel of shared memory (warpgroup::store_transposed_swizzled, as the held
/// forward stores o), and read back as it lies there: 4096 values' bits. Throws on a CUDA error.
std::vector<std::uint16_t> wgmma_store_transposed(const std::vector<float> &d, bool fp16);

} // namespace ruleproof::gpu::test
