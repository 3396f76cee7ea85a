// ruleproof: unit_lower_inverse (gpu/detail/gla_tc.cuh) run on the device four ways, for its test
// (gpu/tests/lower_inverse_tests.cpp) and for racecheck: by the whole block at __syncthreads, as
// chunk_delta_a_tc_kernel solves; by two warpgroups of four at a named barrier, the other two
// waiting at barrier 0 alone, as chunk_delta_fused_tc_kernel's WY warpgroups solve, also after a
// hand-off at a second barrier, one warpgroup arriving and the other waiting (as that kernel handed
// its gates over before 6064282, which has both wait there); and
// that group with no barrier between its passes, a racy form kept for racecheck's failing side.
#pragma once

#include <vector>

namespace ruleproof::gpu::test {

constexpr int LOWER_INVERSE_N = 64; // the chunk's rows: A0 and A are 64 x 64

enum class LowerInverseSync {
  block, ///< 512 threads, __syncthreads
  group, ///< threads 256-511 at named barrier 2 of 256 threads; all at barrier 0 a round
  /// that group, its first warpgroup copying A0 in once the second has arrived at barrier 7
  /// (bar.arrive), where it waits (bar.sync): the fused kernel's hand-off of a chunk's gates
  /// before 6064282
  group_handoff,
  unsynced ///< that group with no barrier inside the solve: racy, for racecheck alone
};

/// (I + A0)^-1 of each of `rounds` strictly lower A0 (64 x 64 row-major, one after another in
/// `a0`), solved one after another in one block, in the same shared memory, as a kernel solves
/// its chunks; every entry of each A (row-major, zeros above the diagonal included) handed back.
/// Throws on a CUDA error.
std::vector<float> lower_inverse_on_device(const std::vector<float> &a0, int rounds,
                                           LowerInverseSync sync);

} // namespace ruleproof::gpu::test
