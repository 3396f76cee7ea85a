// ruleproof: lower_inverse_group_kernel, unit_lower_inverse (gpu/detail/gla_tc.cuh) by the whole
// block or by two of its four warpgroups at a named barrier (as chunk_delta_fused_tc_kernel's WY
// warpgroups run it), round after round in the same shared memory. CPU reference:
// lower_inverse_mirror in gpu/tests/lower_inverse_tests.cpp, the same operations in the same order.
#include "gpu/tests/lower_inverse_group.hpp"

#include <cuda_runtime.h>

#include <stdexcept>

#include "gpu/detail/gla_tc.cuh" // LowerInverse, unit_lower_inverse, C, check
#include "gpu/detail/memory.hpp" // DeviceBytes, device_copy_of, host_copy_of

namespace ruleproof::gpu::test {

namespace {

using namespace detail;

constexpr int THREADS = 512, GROUP = 256, GROUP_BARRIER = 2, HANDOFF_BARRIER = 7;
static_assert(C == LOWER_INVERSE_N, "the chunk's rows");

template <LowerInverseSync SYNC>
__global__ void __launch_bounds__(THREADS)
    lower_inverse_group_kernel(const float *a0, float *a, int rounds) {
  __shared__ float s_a0[C][C + 1]; // A0 by rows, as the fused kernel holds it
  __shared__ __align__(16) tc::LowerInverse s;
  const int tid = threadIdx.x;
  for (int round = 0; round < rounds; ++round) {
    const float *src = a0 + static_cast<long>(round) * C * C;
    float *dst = a + static_cast<long>(round) * C * C;
    const auto put = [dst](int i, int j, float x) { dst[i * C + j] = x; };
    if constexpr (SYNC == LowerInverseSync::block) {
      for (int e = tid; e < C * C; e += THREADS)
        s_a0[e / C][e % C] = src[e];
      __syncthreads();
      tc::unit_lower_inverse(s_a0, s, put); // ends synchronised
    } else {
      if (tid >= THREADS - GROUP) {
        const int g = tid - (THREADS - GROUP);
        const auto sync = [] {
          if constexpr (SYNC != LowerInverseSync::unsynced)
            mma::barrier_sync(GROUP_BARRIER, GROUP);
        };
        if constexpr (SYNC == LowerInverseSync::group_handoff) {
          if (g < GROUP / 2) { // the first warpgroup: A0 once the second has arrived
            mma::barrier_sync(HANDOFF_BARRIER, GROUP);
            for (int e = g; e < C * C; e += GROUP / 2)
              s_a0[e / C][e % C] = src[e];
          } else {
            mma::barrier_arrive(HANDOFF_BARRIER, GROUP);
          }
        } else {
          for (int e = g; e < C * C; e += GROUP)
            s_a0[e / C][e % C] = src[e];
        }
        mma::barrier_sync(GROUP_BARRIER, GROUP); // A0 is in (in every form)
        tc::unit_lower_inverse(s_a0, s, put, g, GROUP, sync);
      }
      asm volatile("barrier.sync 0;\n" ::: "memory"); // the whole block, once a round
    }
  }
}

} // namespace

std::vector<float> lower_inverse_on_device(const std::vector<float> &a0, int rounds,
                                           LowerInverseSync sync) {
  const std::size_t n = static_cast<std::size_t>(C) * C * (rounds > 0 ? rounds : 0);
  if (rounds < 1 || a0.size() != n)
    throw std::invalid_argument("lower_inverse_on_device: a0 must hold rounds (>= 1) 64 x 64 "
                                "matrices");
  const DeviceBytes d_a0 = device_copy_of(a0), d_a(n * sizeof(float));
  using Kernel = void (*)(const float *, float *, int);
  constexpr Kernel kernels[] = {// by LowerInverseSync, in its order
                                lower_inverse_group_kernel<LowerInverseSync::block>,
                                lower_inverse_group_kernel<LowerInverseSync::group>,
                                lower_inverse_group_kernel<LowerInverseSync::group_handoff>,
                                lower_inverse_group_kernel<LowerInverseSync::unsynced>};
  const auto form = static_cast<std::size_t>(sync);
  if (form >= sizeof kernels / sizeof kernels[0])
    throw std::invalid_argument("lower_inverse_on_device: no such form");
  kernels[form]<<<1, THREADS>>>(d_a0.as<const float>(), d_a.as<float>(), rounds);
  check("lower_inverse_group_kernel");
  return host_copy_of<float>(d_a, n);
}

} // namespace ruleproof::gpu::test
