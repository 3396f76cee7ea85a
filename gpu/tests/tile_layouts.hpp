// ruleproof: shared-memory layouts of a tile written out for the GPU tests
// (gpu/tests/tma_tests.cpp, gpu/tests/wgmma_tests.cpp), apart from the device code they check
// (gpu/detail/wgmma.cuh).
#pragma once

namespace ruleproof::gpu::test {

/// Where element (r, k) of a tile of R rows lies in 128-byte-swizzled panels (wgmma.cuh,
/// swizzled_at<R>): panel k / 64, row r of 64 values, its 16-byte pieces permuted by r % 8.
template <int R> int swizzled_at(int r, int k) {
  return (k / 64) * R * 64 + r * 64 + (((k % 64) / 8) ^ (r % 8)) * 8 + k % 8;
}

/// Where element (r, k) of the same tile lies in panels of unpermuted rows: the layout that a
/// copy, a store or a test reading the panels as plain rows would wrongly assume.
template <int R> int unswizzled_at(int r, int k) { return (k / 64) * R * 64 + r * 64 + k % 64; }

} // namespace ruleproof::gpu::test
