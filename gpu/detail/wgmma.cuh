// ruleproof: warpgroup MMA (wgmma.mma_async, sm_90a only): one instruction of the four warps of
// a warpgroup computes D (64 x N) += A (64 x 16) B (16 x N), both operands read from shared
// memory through 64-bit descriptors, D in fp32 registers. It is meant to replace, in the
// tensor-core kernels, the ldmatrix and mma.sync of gpu/detail/mma.cuh (one ldmatrix an operand
// fragment, one mma.sync a 16 x 8 x 16 product), whose instructions are what the sequential
// kernel's chunks wait on (reports/gpu/tensor_core.md). Built only for compute_90a
// (`-gencode arch=compute_90a,code=sm_90a`); its test is gpu/tests/wgmma_tests.cpp (the product it
// runs: gpu/tests/wgmma_product.cu).
//
// Operands in shared memory, without swizzle (PTX ISA, "Shared Memory Matrix Layout" and
// "Matrix Descriptor"): the unit is the core matrix, 8 rows of 16 bytes (8 16-bit values) in
// 128 contiguous bytes. A tile of R rows (M or N) by KC columns (K) is held "K-major" as
// R / 8 x KC / 8 core matrices, each row of a core matrix 8 consecutive k of one row:
//   element (r, k) at ((k / 8) * (R / 8) + r / 8) * 64 + (r % 8) * 8 + k % 8     (k_major_at)
// so that the core matrices next to each other along K are R / 8 * 128 bytes apart (the
// descriptor's leading byte offset) and those along M or N 128 bytes apart (its stride byte
// offset). The same tile "MN-major" (B = M^T for M stored by rows k, as h in v = w h) holds
// each core-matrix row as 8 consecutive r of one k:
//   element (r, k) at ((r / 8) * (KC / 8) + k / 8) * 64 + (k % 8) * 8 + r % 8    (mn_major_at)
// with core matrices along K 128 bytes apart and along M or N KC / 8 * 128 bytes apart.
//
// Operands with the 128-byte swizzle (the Tensor Memory Accelerator's SWIZZLE_128B, the
// descriptor's swizzle mode 1): a tile of R rows by KC columns is held as KC / 64 panels of R rows
// of 128 bytes (64 values), panel after panel, each row's eight 16-byte pieces permuted by the
// row's place in its group of 8 rows:
//   element (r, k) at (k / 64) * R * 64 + r * 64 + ((k % 64) / 8 ^ r % 8) * 8 + k % 8 (swizzled_at)
// every panel 1024-byte aligned (the permutation is of the address bits, 4-6 by 7-9). Read
// K-major (rows r of M or N, K along k), groups of 8 rows are 1024 bytes apart (the stride byte
// offset) and a 16-deep step starts 32 bytes further into its panel; read MN-major (k the M or N
// index, r along K, as the keys in the state's update k^T v), the same 1024 bytes are the stride
// along K and a panel, R * 128 bytes, the leading offset along M or N. A tile copied as one box
// lands this way, each copied piece a whole 128-byte row, where the layout above takes 16 bytes
// a row from L2 (reports/gpu/tensor_core.md, "The tiles swizzled").
//
// D's registers, for warp w of the warpgroup and lane l, entry 4 j + e (j < N / 8, e < 4):
// row 16 w + l / 4 + 8 (e / 2), column 8 j + 2 (l % 4) + e % 2: the place of entry e of
// mma.sync's accumulator (mma::acc_row, mma::acc_col) for the n tile j of the warp's 16 rows.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "gpu/detail/mma.cuh" // shared_address

namespace ruleproof::gpu::detail::wgmma {

/// Index of element (r, k) of an R-row tile held K-major (header).
template <int R> __device__ inline int k_major_at(int r, int k) {
  return ((k / 8) * (R / 8) + r / 8) * 64 + (r % 8) * 8 + k % 8;
}
/// Index of element (r, k) of a tile of KC columns held MN-major (header).
template <int KC> __device__ inline int mn_major_at(int r, int k) {
  return ((r / 8) * (KC / 8) + k / 8) * 64 + (k % 8) * 8 + r % 8;
}

/// Index of element (r, k) of an R-row tile held in 128-byte-swizzled panels (header).
template <int R> __host__ __device__ inline int swizzled_at(int r, int k) {
  return (k / 64) * R * 64 + r * 64 + (((k % 64) / 8) ^ (r % 8)) * 8 + k % 8;
}

/// The descriptor of an operand at `tile` (16-byte aligned, shared memory), without swizzle:
/// core matrices `along_k` bytes apart along K, `along_mn` bytes apart along M or N.
__device__ inline std::uint64_t descriptor(const void *tile, std::uint32_t along_k,
                                           std::uint32_t along_mn) {
  const std::uint64_t start = (mma::shared_address(tile) & 0x3FFFF) >> 4;
  return start | (static_cast<std::uint64_t>((along_k >> 4) & 0x3FFF) << 16) |
         (static_cast<std::uint64_t>((along_mn >> 4) & 0x3FFF) << 32); // bits 62-63: 0, no swizzle
}
/// Bytes from a K-major tile of R rows to its 16 columns k0.. .
template <int R> __host__ __device__ constexpr int k_major_offset(int k0) {
  return (k0 / 8) * (R / 8) * 128;
}
/// Descriptor of the 16 columns k0.. of a K-major tile of R rows.
template <int R> __device__ inline std::uint64_t k_major(const void *tile, int k0) {
  return descriptor(static_cast<const char *>(tile) + k_major_offset<R>(k0), R / 8 * 128, 128);
}
/// Descriptor of the 16 columns k0.. of an MN-major tile of KC columns.
template <int KC> __device__ inline std::uint64_t mn_major(const void *tile, int k0) {
  return descriptor(static_cast<const char *>(tile) + (k0 / 8) * 128, 128, KC / 8 * 128);
}

/// The descriptor of an operand at `at` in 128-byte-swizzled panels (header): `leading` and
/// `stride` its two byte offsets.
__device__ inline std::uint64_t descriptor_swizzled(const void *at, std::uint32_t leading,
                                                    std::uint32_t stride) {
  return descriptor(at, leading, stride) | (1ull << 62); // bits 62-63: 1, the 128-byte swizzle
}
/// Bytes from an R-row tile in 128-byte-swizzled panels to its 16 columns k0.. read K-major.
template <int R> __host__ __device__ constexpr int k_major_swizzled_offset(int k0) {
  return (k0 / 64) * R * 128 + (k0 % 64) * 2;
}
/// Descriptor of the 16 columns k0.. of an R-row tile held in 128-byte-swizzled panels, read
/// K-major (the leading offset unused: a step lies within one row of 128 bytes).
template <int R> __device__ inline std::uint64_t k_major_swizzled(const void *tile, int k0) {
  return descriptor_swizzled(static_cast<const char *>(tile) + k_major_swizzled_offset<R>(k0), 16,
                             1024);
}
/// Bytes from a tile in 128-byte-swizzled panels to its rows k0.. read MN-major.
__host__ __device__ constexpr int mn_major_swizzled_offset(int k0) { return k0 * 128; }
/// Descriptor of rows k0.. (16 of them, the K of a step) of an R-row tile held in
/// 128-byte-swizzled panels, read MN-major: its columns the M or N index, a panel's 64 of them.
template <int R> __device__ inline std::uint64_t mn_major_swizzled(const void *tile, int k0) {
  return descriptor_swizzled(static_cast<const char *>(tile) + mn_major_swizzled_offset(k0),
                             R * 128, 1024);
}
/// The same descriptor `bytes` (a multiple of 16) further on in shared memory: its start field
/// holds the address in units of 16 bytes, 14 bits, which no address of the 228 KB a block may
/// have carries out of. A kernel makes a tile's descriptor once and moves it to each place and
/// step, instead of making each from the tile's address.
__device__ inline std::uint64_t moved(std::uint64_t desc, int bytes) {
  return desc + static_cast<std::uint64_t>(bytes >> 4);
}

/// Makes this thread's writes to shared memory (plain stores, cp.async) visible to wgmma, which
/// reads through the async proxy; synchronise the block after it.
__device__ inline void fence_shared_for_async() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
/// Orders the warpgroup's register and shared-memory accesses before the wgmma that follow.
__device__ inline void fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
/// Closes the group of wgmma issued so far.
__device__ inline void commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
/// Waits until at most N groups of this warpgroup's wgmma are still running.
template <int N> __device__ inline void wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// the 32 accumulators of a 64 x 64 D as an asm statement's operands %0 to %31, and their list
#define RULEPROOF_WGMMA_D                                                                          \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),  \
      "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]),     \
      "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]),   \
      "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]),   \
      "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define RULEPROOF_WGMMA_REGS                                                                       \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "    \
  "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"

/// D (64 x 64, 32 values a thread) += A B^T-or-B over 16 columns of K: A K-major (A_MN false) or
/// MN-major (A_MN true: A = M^T for M stored by rows k, as k^T in the state's update k^T v); B
/// K-major (B_MN false: B's tile holds N rows of K) or MN-major (B_MN true); `accumulate` false
/// overwrites D.
template <class T, bool B_MN, bool A_MN = false>
__device__ inline void m64n64k16(float (&d)[32], std::uint64_t a, std::uint64_t b,
                                 bool accumulate) {
  static_assert(sizeof(T) == 2, "16-bit operands");
  constexpr int TRANS_A = A_MN ? 1 : 0, TRANS_B = B_MN ? 1 : 0;
  if constexpr (std::is_same_v<T, __nv_bfloat16>)
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " RULEPROOF_WGMMA_REGS
                 ", %32, %33, p, 1, 1, %35, %36;\n}\n"
                 : RULEPROOF_WGMMA_D
                 : "l"(a), "l"(b), "r"(static_cast<int>(accumulate)), "n"(TRANS_A), "n"(TRANS_B));
  else
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 " RULEPROOF_WGMMA_REGS
                 ", %32, %33, p, 1, 1, %35, %36;\n}\n"
                 : RULEPROOF_WGMMA_D
                 : "l"(a), "l"(b), "r"(static_cast<int>(accumulate)), "n"(TRANS_A), "n"(TRANS_B));
}

/// D (64 x 64, 32 values a thread) += A B^T-or-B over 16 columns of K, A from registers: `a` this
/// thread's four pairs of A's 16-bit values in mma.sync's fragment layout for the warp's 16 rows
/// (a_from_d makes them from a D of the same layout); B in shared memory as m64n64k16 reads it. The
/// registers of `a` are read while the product runs: fence_operand them after its wait.
template <class T, bool B_MN>
__device__ inline void m64n64k16_rs(float (&d)[32], const std::uint32_t (&a)[4], std::uint64_t b,
                                    bool accumulate) {
  static_assert(sizeof(T) == 2, "16-bit operands");
  constexpr int TRANS_B = B_MN ? 1 : 0;
  if constexpr (std::is_same_v<T, __nv_bfloat16>)
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " RULEPROOF_WGMMA_REGS
                 ", {%32, %33, %34, %35}, %36, p, 1, 1, %38;\n}\n"
                 : RULEPROOF_WGMMA_D
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b),
                   "r"(static_cast<int>(accumulate)), "n"(TRANS_B));
  else
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 " RULEPROOF_WGMMA_REGS
                 ", {%32, %33, %34, %35}, %36, p, 1, 1, %38;\n}\n"
                 : RULEPROOF_WGMMA_D
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b),
                   "r"(static_cast<int>(accumulate)), "n"(TRANS_B));
}

/// Keeps values in their registers up to this point: after a product's wait, for the registers it
/// read (m64n64k16_rs's `a`) or wrote, so that the compiler reuses none of them while it runs.
template <int N> __device__ inline void fence_operand(float (&x)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i)
    asm volatile("" : "+f"(x[i])::"memory");
}
template <int N> __device__ inline void fence_operand(std::uint32_t (&x)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i)
    asm volatile("" : "+r"(x[i])::"memory");
}

/// Row of D entry i (0..31) of this thread (header).
__device__ inline int d_row(int i) {
  return 16 * ((threadIdx.x % 128) / 32) + (threadIdx.x % 32) / 4 + 8 * ((i % 4) / 2);
}
/// Column of D entry i of this thread.
__device__ inline int d_col(int i) { return 8 * (i / 4) + 2 * (threadIdx.x % 4) + i % 2; }

/// Stores four 8 x 8 matrices of 16-bit values transposed (stmatrix .trans): x[m] holds this
/// thread's two entries of matrix m in mma.sync's fragment layout (row l / 4, columns 2 (l % 4) and
/// 2 (l % 4) + 1, for lane l), and lane l gives the address of row l % 8 of matrix l / 8 as it is
/// stored, 16 contiguous bytes: the matrix's column l % 8.
__device__ inline void store_transposed_x4(const void *row, const std::uint32_t (&x)[4]) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(
                   mma::shared_address(row)),
               "r"(x[0]), "r"(x[1]), "r"(x[2]), "r"(x[3])
               : "memory");
}

/// A's fragment for m64n64k16_rs over columns [16 s, 16 s + 16) of a 64 x 64 D held in fp32 (the
/// same rows, a warp's 16): D's entries 8 s .. 8 s + 7, two to a register, rounded to T.
template <class T>
__device__ inline void a_from_d(std::uint32_t (&a)[4], const float (&d)[32], int s) {
#pragma unroll
  for (int r = 0; r < 4; ++r)
    a[r] = mma::pack_rounded<T>(d[8 * s + 2 * r], d[8 * s + 2 * r + 1]);
}

} // namespace ruleproof::gpu::detail::wgmma

#undef RULEPROOF_WGMMA_D
#undef RULEPROOF_WGMMA_REGS
