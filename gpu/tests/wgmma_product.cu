// ruleproof: wgmma_tile_product_kernel, one warpgroup's D = A B^T (64 x 64, K = 128) by eight
// m64n64k16 wgmma from the layouts of gpu/detail/wgmma.cuh (A and B each K-major or MN-major, in
// core matrices without swizzle or in 128-byte-swizzled panels, their descriptors made for each
// step or made once and moved); and wgmma_store_transposed_kernel, a warpgroup's accumulator
// stored transposed into a swizzled panel (warpgroup::store_transposed_swizzled). CPU reference:
// the exact product in gpu/tests/wgmma_tests.cpp (exact_product), the layouts written out in
// gpu/tests/tile_layouts.hpp.
#include "gpu/tests/wgmma_product.hpp"

#include <cuda_runtime.h>

#include <stdexcept>
#include <type_traits>

#include "gpu/detail/memory.hpp"       // DeviceBytes, device_copy_of, host_copy_of
#include "gpu/detail/warpgroup_tc.cuh" // store_transposed_swizzled, check_status, check
#include "gpu/detail/wgmma.cuh"

namespace ruleproof::gpu::test {

namespace {

using namespace detail;

constexpr int ALIGN = 1024; // a swizzled panel's alignment, the shared memory rounded up to it

/// Where element (r, k) of a tile of R rows by K columns lies, K-major (MN false) or MN-major.
template <int R, int K, bool MN, bool SWIZZLED> __device__ int tile_at(int r, int k) {
  if constexpr (SWIZZLED)
    return MN ? wgmma::swizzled_at<K>(k, r) : wgmma::swizzled_at<R>(r, k);
  else
    return MN ? wgmma::mn_major_at<K>(r, k) : wgmma::k_major_at<R>(r, k);
}
/// The descriptor of columns k0.. of that tile.
template <int R, int K, bool MN, bool SWIZZLED>
__device__ std::uint64_t tile_descriptor(const void *tile, int k0) {
  if constexpr (SWIZZLED)
    return MN ? wgmma::mn_major_swizzled<K>(tile, k0) : wgmma::k_major_swizzled<R>(tile, k0);
  else
    return MN ? wgmma::mn_major<K>(tile, k0) : wgmma::k_major<R>(tile, k0);
}
/// The same descriptor made at column 0 and moved to columns k0.. (wgmma::moved); an MN-major
/// tile without swizzle has no offset function and is not asked for (run() refuses it).
template <int R, int K, bool MN, bool SWIZZLED>
__device__ std::uint64_t moved_descriptor(const void *tile, int k0) {
  const std::uint64_t at_0 = tile_descriptor<R, K, MN, SWIZZLED>(tile, 0);
  if constexpr (SWIZZLED)
    return wgmma::moved(at_0, MN ? wgmma::mn_major_swizzled_offset(k0)
                                 : wgmma::k_major_swizzled_offset<R>(k0));
  else
    return wgmma::moved(at_0, wgmma::k_major_offset<R>(k0));
}

template <class T, bool B_MN, bool A_MN, bool SWIZZLED>
__global__ void __launch_bounds__(128)
    wgmma_tile_product_kernel(const T *a, const T *bt, float *d, bool swapped, bool moved) {
  constexpr int M = WGMMA_M, N = WGMMA_N, K = WGMMA_K;
  // each tile in a region three times its size, so that descriptors with the offsets swapped,
  // whose reads reach past the tile, stay inside the block's shared memory
  extern __shared__ __align__(128) unsigned char shared_bytes[];
  T *sa = reinterpret_cast<T *>(shared_bytes +
                                (ALIGN - mma::shared_address(shared_bytes) % ALIGN) % ALIGN),
    *sb = sa + 3 * M * K;
  for (int e = threadIdx.x; e < M * K; e += blockDim.x)
    sa[tile_at<M, K, A_MN, SWIZZLED>(e / K, e % K)] = a[e];
  for (int e = threadIdx.x; e < N * K; e += blockDim.x)
    sb[tile_at<N, K, B_MN, SWIZZLED>(e / K, e % K)] = bt[e];
  wgmma::fence_shared_for_async();
  __syncthreads();
  float acc[32] = {};
  wgmma::fence();
#pragma unroll
  for (int k0 = 0; k0 < K; k0 += 16) {
    std::uint64_t da = moved ? moved_descriptor<M, K, A_MN, SWIZZLED>(sa, k0)
                             : tile_descriptor<M, K, A_MN, SWIZZLED>(sa, k0);
    std::uint64_t db = moved ? moved_descriptor<N, K, B_MN, SWIZZLED>(sb, k0)
                             : tile_descriptor<N, K, B_MN, SWIZZLED>(sb, k0);
    if (swapped) { // the two offsets, bits 16-29 and 32-45, each in the other's place
      const auto swap = [](std::uint64_t x) {
        const std::uint64_t along_k = (x >> 16) & 0x3FFF, along_mn = (x >> 32) & 0x3FFF;
        return (x & ~((0x3FFFull << 16) | (0x3FFFull << 32))) | (along_mn << 16) | (along_k << 32);
      };
      da = swap(da);
      db = swap(db);
    }
    wgmma::m64n64k16<T, B_MN, A_MN>(acc, da, db, true);
  }
  wgmma::commit();
  wgmma::wait<0>();
#pragma unroll
  for (int i = 0; i < 32; ++i)
    d[wgmma::d_row(i) * N + wgmma::d_col(i)] = acc[i];
}

template <class T>
__global__ void __launch_bounds__(128)
    wgmma_store_transposed_kernel(const float *d, std::uint16_t *out) {
  __shared__ __align__(1024) std::uint16_t tile[WGMMA_M * WGMMA_N];
  float acc[32];
#pragma unroll
  for (int i = 0; i < 32; ++i)
    acc[i] = d[wgmma::d_row(i) * WGMMA_N + wgmma::d_col(i)];
  warpgroup::store_transposed_swizzled(reinterpret_cast<T *>(tile), acc, threadIdx.x);
  __syncthreads();
  for (int e = threadIdx.x; e < WGMMA_M * WGMMA_N; e += blockDim.x)
    out[e] = tile[e];
}

template <class T>
std::vector<float> run(const std::vector<std::uint16_t> &a, const std::vector<std::uint16_t> &bt,
                       WgmmaLayout layout) {
  constexpr int M = WGMMA_M, N = WGMMA_N, K = WGMMA_K;
  if (a.size() != static_cast<std::size_t>(M) * K || bt.size() != static_cast<std::size_t>(N) * K)
    throw std::invalid_argument("wgmma_tile_product: A must be 64 x 128 and Bt 64 x 128");
  if (layout.moved && !layout.swizzled && (layout.a_mn_major || layout.b_mn_major))
    throw std::invalid_argument("wgmma_tile_product: no moved descriptor for an MN-major tile "
                                "without swizzle");
  const DeviceBytes da = device_copy_of(a), db = device_copy_of(bt),
                    dd(static_cast<std::size_t>(M) * N * sizeof(float));
  const int bytes = 3 * (M + N) * K * 2 + ALIGN;
  const auto pick = [&](auto swizzled) {
    constexpr bool S = decltype(swizzled)::value;
    return layout.a_mn_major ? (layout.b_mn_major ? wgmma_tile_product_kernel<T, true, true, S>
                                                  : wgmma_tile_product_kernel<T, false, true, S>)
                             : (layout.b_mn_major ? wgmma_tile_product_kernel<T, true, false, S>
                                                  : wgmma_tile_product_kernel<T, false, false, S>);
  };
  auto *kernel = layout.swizzled ? pick(std::true_type{}) : pick(std::false_type{});
  check_status(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes),
               "wgmma_tile_product_kernel: shared memory");
  kernel<<<1, 128, bytes>>>(da.as<T>(), db.as<T>(), dd.as<float>(), layout.offsets_swapped,
                            layout.moved);
  check("wgmma_tile_product_kernel");
  return host_copy_of<float>(dd, static_cast<std::size_t>(M) * N);
}

} // namespace

std::vector<float> wgmma_tile_product(const std::vector<std::uint16_t> &a,
                                      const std::vector<std::uint16_t> &bt, bool fp16,
                                      WgmmaLayout layout) {
  return fp16 ? run<__half>(a, bt, layout) : run<__nv_bfloat16>(a, bt, layout);
}

std::vector<std::uint16_t> wgmma_store_transposed(const std::vector<float> &d, bool fp16) {
  static_assert(WGMMA_M == 64 && WGMMA_N == 64, "one 64 x 64 panel");
  if (d.size() != static_cast<std::size_t>(WGMMA_M) * WGMMA_N)
    throw std::invalid_argument("wgmma_store_transposed: D must be 64 x 64");
  const DeviceBytes dd = device_copy_of(d), dout(d.size() * 2);
  if (fp16)
    wgmma_store_transposed_kernel<__half><<<1, 128>>>(dd.as<float>(), dout.as<std::uint16_t>());
  else
    wgmma_store_transposed_kernel<__nv_bfloat16>
        <<<1, 128>>>(dd.as<float>(), dout.as<std::uint16_t>());
  check("wgmma_store_transposed_kernel");
  return host_copy_of<std::uint16_t>(dout, d.size());
}

} // namespace ruleproof::gpu::test
