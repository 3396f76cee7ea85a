// ruleproof: the warp-level tensor-core product the tensor-core kernels share
// (gpu/chunk_gla_tc.cu): mma.sync m16n8k16 with 16-bit operands (bf16 or fp16) and fp32
// accumulators, its operand fragments loaded from shared memory by ldmatrix, and the places of a
// fragment's entries; and cp.async, the copy from global to shared memory that runs while the
// block computes. CUDA only; sm_80 and later (built for sm_90).
//
// One warp computes D (16 x 8) += A (16 x 16) B (16 x 8). Lane l holds, with r = l / 4 and
// c = 2 (l % 4) (PTX ISA, "Matrix Fragments for mma.m16n8k16"):
//   A: a[0] = A[r][c, c+1], a[1] = A[r+8][c, c+1], a[2] = A[r][c+8, c+9], a[3] = A[r+8][c+8, c+9]
//   B: b[0] = B[c, c+1][r], b[1] = B[c+8, c+9][r]
//   D: d[0], d[1] = D[r][c, c+1];  d[2], d[3] = D[r+8][c, c+1]
// Every tile lives in shared memory as rows of 16-bit values, `ld` values apart (a multiple of
// 8, so that every 8-value row segment ldmatrix reads is 16-byte aligned; pad each row by 8
// values so that 8 consecutive rows hit distinct banks).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace ruleproof::gpu::detail::mma {

/// The A operand of one product: 16 x 16, four registers of two 16-bit values.
struct FragA {
  std::uint32_t x[4];
};
/// The B operand: 16 x 8, two registers.
struct FragB {
  std::uint32_t x[2];
};
/// The accumulator: 16 x 8 in fp32, four values.
struct Acc {
  float x[4] = {0, 0, 0, 0};
};

/// Row (within the tile) of accumulator entry e (0..3) of this lane.
__device__ inline int acc_row(int e) { return (threadIdx.x % 32) / 4 + (e >= 2 ? 8 : 0); }
/// Column of accumulator entry e of this lane.
__device__ inline int acc_col(int e) { return 2 * (threadIdx.x % 4) + (e & 1); }

__device__ inline std::uint32_t shared_address(const void *p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

/// A 16 x 16 tile of a row-major matrix in shared memory, rows row0.., columns col0.. of
/// `base` (A[i][k] at base[i * ld + k]).
template <class T>
__device__ inline void load_a(FragA &f, const T *base, int ld, int row0, int col0) {
  const int lane = threadIdx.x % 32;
  // lanes 0-7: rows 0-7, column 0; 8-15: rows 8-15, column 0; 16-23: rows 0-7, column 8; ...
  const T *p = base + (row0 + lane % 16) * ld + col0 + (lane / 16) * 8;
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(f.x[0]), "=r"(f.x[1]), "=r"(f.x[2]), "=r"(f.x[3])
               : "r"(shared_address(p)));
}

/// A 16 x 16 tile of the transpose of a row-major matrix M in shared memory: A[i][k] =
/// M[k0 + k][i0 + i] (M[k][i] at base[k * ld + i]).
template <class T>
__device__ inline void load_a_transposed(FragA &f, const T *base, int ld, int i0, int k0) {
  const int lane = threadIdx.x % 32, m = lane / 8, r = lane % 8;
  // matrix m: a[m] = A[rows (m & 1) * 8 ..][columns (m >> 1) * 8 ..], stored rows k
  const T *p = base + (k0 + (m >> 1) * 8 + r) * ld + i0 + (m & 1) * 8;
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(f.x[0]), "=r"(f.x[1]), "=r"(f.x[2]), "=r"(f.x[3])
               : "r"(shared_address(p)));
}

/// A 16 x 8 tile B[k][n] = M[n0 + n][k0 + k] of a matrix M stored by rows n (M[n][k] at
/// base[n * ld + k]): the right factor of X M^T.
template <class T> __device__ inline void load_b(FragB &f, const T *base, int ld, int n0, int k0) {
  const int lane = threadIdx.x % 32;
  // lanes 0-7 address matrix 0 (k 0-7), lanes 8-15 matrix 1 (k 8-15); the rest repeat them
  const T *p = base + (n0 + lane % 8) * ld + k0 + ((lane / 8) & 1) * 8;
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(f.x[0]), "=r"(f.x[1])
               : "r"(shared_address(p)));
}

/// A 16 x 8 tile B[k][n] = M[k0 + k][n0 + n] of a matrix M stored by rows k (M[k][n] at
/// base[k * ld + n]): the right factor of X M.
template <class T>
__device__ inline void load_b_rows(FragB &f, const T *base, int ld, int k0, int n0) {
  const int lane = threadIdx.x % 32;
  const T *p = base + (k0 + lane % 8 + ((lane / 8) & 1) * 8) * ld + n0;
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(f.x[0]), "=r"(f.x[1])
               : "r"(shared_address(p)));
}

/// load_b of two tiles, n0 and n1, in one ldmatrix (.x4): lanes 16-31 address the second.
template <class T>
__device__ inline void load_b2(FragB &f0, FragB &f1, const T *base, int ld, int n0, int n1,
                               int k0) {
  const int lane = threadIdx.x % 32;
  const T *p = base + ((lane < 16 ? n0 : n1) + lane % 8) * ld + k0 + ((lane / 8) & 1) * 8;
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(f0.x[0]), "=r"(f0.x[1]), "=r"(f1.x[0]), "=r"(f1.x[1])
               : "r"(shared_address(p)));
}

/// load_b_rows of two tiles, columns n0.. and n1.., in one ldmatrix (.x4): lanes 16-31 address
/// the second.
template <class T>
__device__ inline void load_b_rows2(FragB &f0, FragB &f1, const T *base, int ld, int k0, int n0,
                                    int n1) {
  const int lane = threadIdx.x % 32;
  const T *p = base + (k0 + lane % 8 + ((lane / 8) & 1) * 8) * ld + (lane < 16 ? n0 : n1);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(f0.x[0]), "=r"(f0.x[1]), "=r"(f1.x[0]), "=r"(f1.x[1])
               : "r"(shared_address(p)));
}

/// Two values as the 32-bit register of a fragment (the first in the low half).
__device__ inline std::uint32_t pack(__nv_bfloat16 lo, __nv_bfloat16 hi) {
  return static_cast<std::uint32_t>(__bfloat16_as_ushort(lo)) |
         (static_cast<std::uint32_t>(__bfloat16_as_ushort(hi)) << 16);
}
__device__ inline std::uint32_t pack(__half lo, __half hi) {
  return static_cast<std::uint32_t>(__half_as_ushort(lo)) |
         (static_cast<std::uint32_t>(__half_as_ushort(hi)) << 16);
}

/// Two fp32 values rounded to T (to nearest, ties to even, as to<T> rounds each) and packed as
/// pack packs them: one cvt instruction for the two.
template <class T> __device__ inline std::uint32_t pack_rounded(float lo, float hi);
template <> __device__ inline std::uint32_t pack_rounded<__nv_bfloat16>(float lo, float hi) {
  const __nv_bfloat162 two = __floats2bfloat162_rn(lo, hi); // .x = lo: the low half
  return *reinterpret_cast<const std::uint32_t *>(&two);
}
template <> __device__ inline std::uint32_t pack_rounded<__half>(float lo, float hi) {
  const __half2 two = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const std::uint32_t *>(&two);
}

/// d += a b, operands bf16.
__device__ inline void mma(Acc &d, const FragA &a, const FragB &b, __nv_bfloat16) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
               "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
               : "+f"(d.x[0]), "+f"(d.x[1]), "+f"(d.x[2]), "+f"(d.x[3])
               : "r"(a.x[0]), "r"(a.x[1]), "r"(a.x[2]), "r"(a.x[3]), "r"(b.x[0]), "r"(b.x[1]));
}
/// d += a b, operands fp16.
__device__ inline void mma(Acc &d, const FragA &a, const FragB &b, __half) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
               "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
               : "+f"(d.x[0]), "+f"(d.x[1]), "+f"(d.x[2]), "+f"(d.x[3])
               : "r"(a.x[0]), "r"(a.x[1]), "r"(a.x[2]), "r"(a.x[3]), "r"(b.x[0]), "r"(b.x[1]));
}

/// Starts copying `bytes` (4, 8 or 16; 16-byte copies bypass L1) from global src to shared dst;
/// with `zero` the destination is filled with zeros instead (src is not read).
template <int bytes> __device__ inline void copy_async(void *dst, const void *src, bool zero) {
  const int read = zero ? 0 : bytes;
  if constexpr (bytes == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_address(dst)),
                 "l"(src), "r"(read));
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(shared_address(dst)),
                 "l"(src), "n"(bytes), "r"(read));
}
/// Closes the group of copies started so far.
__device__ inline void commit_copies() { asm volatile("cp.async.commit_group;\n" ::); }
/// Waits for every group of copies this thread started (then synchronise the block).
__device__ inline void wait_copies() { asm volatile("cp.async.wait_group 0;\n" ::); }
/// Waits for every group of copies this thread started but the last one closed.
__device__ inline void wait_copies_but_last() { asm volatile("cp.async.wait_group 1;\n" ::); }
/// Waits for every group of copies this thread started but the last N closed.
template <int N> __device__ inline void wait_copies_but() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

/// Named barrier `id` (1 to 15; 0 is __syncthreads') of `threads` threads, a multiple of 32:
/// sync waits until that many have arrived or synced, arrive counts this thread and goes on. The
/// shared-memory writes before either are seen by the threads past the sync.
__device__ inline void barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ inline void barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

} // namespace ruleproof::gpu::detail::mma
