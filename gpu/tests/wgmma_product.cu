// ruleproof: wgmma_tile_product_kernel, one warpgroup's D = A B^T (64 x 64, K = 128) by eight
// m64n64k16 wgmma from the layouts of gpu/detail/wgmma.cuh (A and B each K-major or MN-major, in
// core matrices without swizzle or in 128-byte-swizzled panels). CPU reference: the exact product
// in gpu/tests/wgmma_tests.cpp (exact_product).
#include "gpu/tests/wgmma_product.hpp"

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>
#include <type_traits>

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

template <class T, bool B_MN, bool A_MN, bool SWIZZLED>
__global__ void __launch_bounds__(128)
    wgmma_tile_product_kernel(const T *a, const T *bt, float *d, bool swapped) {
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
    std::uint64_t da = tile_descriptor<M, K, A_MN, SWIZZLED>(sa, k0);
    std::uint64_t db = tile_descriptor<N, K, B_MN, SWIZZLED>(sb, k0);
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

void cuda_ok(cudaError_t e, const char *what) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string("wgmma_tile_product: ") + what + ": " +
                             cudaGetErrorString(e));
}

template <class T>
std::vector<float> run(const std::vector<std::uint16_t> &a, const std::vector<std::uint16_t> &bt,
                       WgmmaLayout layout) {
  constexpr int M = WGMMA_M, N = WGMMA_N, K = WGMMA_K;
  if (a.size() != static_cast<std::size_t>(M) * K || bt.size() != static_cast<std::size_t>(N) * K)
    throw std::invalid_argument("wgmma_tile_product: A must be 64 x 128 and Bt 64 x 128");
  T *da = nullptr, *db = nullptr;
  float *dd = nullptr;
  std::vector<float> d(static_cast<std::size_t>(M) * N);
  cuda_ok(cudaMalloc(&da, a.size() * 2), "cudaMalloc");
  cuda_ok(cudaMalloc(&db, bt.size() * 2), "cudaMalloc");
  cuda_ok(cudaMalloc(&dd, d.size() * sizeof(float)), "cudaMalloc");
  cuda_ok(cudaMemcpy(da, a.data(), a.size() * 2, cudaMemcpyHostToDevice), "copy A");
  cuda_ok(cudaMemcpy(db, bt.data(), bt.size() * 2, cudaMemcpyHostToDevice), "copy Bt");
  const int bytes = 3 * (M + N) * K * 2 + ALIGN;
  const auto pick = [&](auto swizzled) {
    constexpr bool S = decltype(swizzled)::value;
    return layout.a_mn_major ? (layout.b_mn_major ? wgmma_tile_product_kernel<T, true, true, S>
                                                  : wgmma_tile_product_kernel<T, false, true, S>)
                             : (layout.b_mn_major ? wgmma_tile_product_kernel<T, true, false, S>
                                                  : wgmma_tile_product_kernel<T, false, false, S>);
  };
  auto *kernel = layout.swizzled ? pick(std::true_type{}) : pick(std::false_type{});
  cuda_ok(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes),
          "shared memory");
  kernel<<<1, 128, bytes>>>(da, db, dd, layout.offsets_swapped);
  cuda_ok(cudaGetLastError(), "launch");
  cuda_ok(cudaMemcpy(d.data(), dd, d.size() * sizeof(float), cudaMemcpyDeviceToHost), "copy D");
  cudaFree(da);
  cudaFree(db);
  cudaFree(dd);
  return d;
}

} // namespace

std::vector<float> wgmma_tile_product(const std::vector<std::uint16_t> &a,
                                      const std::vector<std::uint16_t> &bt, bool fp16,
                                      WgmmaLayout layout) {
  return fp16 ? run<__half>(a, bt, layout) : run<__nv_bfloat16>(a, bt, layout);
}

} // namespace ruleproof::gpu::test
