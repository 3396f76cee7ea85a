// ruleproof: the device helpers the GLA family's tensor-core kernels share (gpu/chunk_gla_tc.cu,
// the forward and the sequential state kernel; gpu/chunk_gla_bwd_tc.cu, the backward): conversions
// to and from the 16-bit input type, tiles copied into shared memory, a chunk's gates
// (chunk_local_cumsum of reference/shared/chunk.hpp, in shared memory), the spread limit of a
// factored decay, the warp's product of a row block by a matrix stored by rows; and the WY
// kernels' steps (gpu/chunk_delta_tc.cu, gpu/chunk_dplr_tc.cu): the unit lower triangle's inverse,
// its product by a matrix, a chunk's scores stored. CUDA only.
#pragma once

#include <type_traits>

#include "chunk_device.cuh" // C, ChunkRows, ChunkDims
#include "mma.cuh"

namespace ruleproof::gpu::detail::tc {

constexpr int PAD = 8;  // 16-bit values each shared row is padded by (16 bytes)
constexpr int SUB = 16; // rows of a sub-chunk (and of a warp's row block)

template <class T> __device__ inline T to(float x);
template <> __device__ inline __nv_bfloat16 to(float x) { return __float2bfloat16_rn(x); }
template <> __device__ inline __half to(float x) { return __float2half_rn(x); }
__device__ inline float val(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ inline float val(__half x) { return __half2float(x); }

/// Starts copying a tile of `rows` rows of `width` 16-bit values (a multiple of 8) into dst
/// (`ld` values a row), row r from src + r * stride; rows from `valid` (at least 1) on are
/// zero-filled. Each thread keeps one 16-byte column of the rows it copies and steps its source
/// pointer from row to row (the block's size a multiple of width / 8).
template <class T>
__device__ inline void copy_rows_async(T *dst, int ld, const T *src, long stride, int rows,
                                       int valid, int width) {
  constexpr int PER = 16 / sizeof(T);
  const int vectors = width / PER, step = blockDim.x / vectors;
  const int col = (threadIdx.x % vectors) * PER;
  int r = threadIdx.x / vectors;
  const T *from = src + r * stride + col;
  for (; r < rows; r += step, from += step * stride) {
    const bool zero = r >= valid;
    mma::copy_async<16>(dst + r * ld + col, zero ? src + col : from, zero);
  }
}

/// copy_rows_async with the tile's rows, its width and the threads that copy it known when
/// compiled: each thread's first source and destination are computed once, the rows it copies
/// are unrolled (constant offsets from them), and a tile of ROWS valid rows takes no zero-fill
/// test. `tid`: the thread's place among the THREADS (its threadIdx.x where left out).
template <int ROWS, int WIDTH, int THREADS, class T>
__device__ inline void copy_tile_async(T *dst, int ld, const T *src, long stride, int valid,
                                       int tid = -1) {
  constexpr int PER = 16 / sizeof(T), VECTORS = WIDTH / PER, STEP = THREADS / VECTORS;
  constexpr int PASSES = (ROWS + STEP - 1) / STEP;
  static_assert(THREADS % VECTORS == 0, "every thread copies one 16-byte column");
  const int i = tid < 0 ? static_cast<int>(threadIdx.x) : tid;
  const int col = (i % VECTORS) * PER, r0 = i / VECTORS;
  const T *from = src + r0 * stride + col;
  T *to = dst + r0 * ld + col;
  if (valid >= ROWS) {
#pragma unroll
    for (int pass = 0; pass < PASSES; ++pass)
      if (ROWS % STEP == 0 || r0 + pass * STEP < ROWS)
        mma::copy_async<16>(to + pass * STEP * ld, from + pass * STEP * stride, false);
  } else {
#pragma unroll
    for (int pass = 0; pass < PASSES; ++pass) {
      const int r = r0 + pass * STEP;
      if (ROWS % STEP == 0 || r < ROWS) {
        const bool zero = r >= valid;
        mma::copy_async<16>(to + pass * STEP * ld, zero ? src + col : from + pass * STEP * stride,
                            zero);
      }
    }
  }
}

/// dst = f(i, col, src) for the rows [0, rows) of a tile of W 16-bit values a row (src and dst
/// in shared memory, ld_src and ld_dst values a row, multiples of 8; dst may be src), each value
/// rounded to T, 8 values a load and a store. Called by the whole block.
template <class T, int W, class F>
__device__ inline void map_rows(T *dst, int ld_dst, const T *src, int ld_src, int rows, F f) {
  for (int e = threadIdx.x; e < rows * (W / 8); e += blockDim.x) {
    const int i = e / (W / 8), col0 = (e % (W / 8)) * 8;
    alignas(16) T x[8];
    *reinterpret_cast<uint4 *>(x) = *reinterpret_cast<const uint4 *>(src + i * ld_src + col0);
#pragma unroll
    for (int u = 0; u < 8; ++u)
      x[u] = to<T>(f(i, col0 + u, val(x[u])));
    *reinterpret_cast<uint4 *>(dst + i * ld_dst + col0) = *reinterpret_cast<const uint4 *>(x);
  }
}

/// e^x for a decay factor, by the fast exponential (ex2.approx of x log2(e)): its error, at most
/// 2 + floor(1.173 |x|) units in the last place (CUDA C++ Programming Guide, "Intrinsic
/// Functions"), is below 2^-16 relative for |x| <= 80 (and past that the factor underflows), far
/// below the rounding of the 16-bit operand it becomes or of the 16-bit output it scales (2^-8 or
/// 2^-11). The terms computed pairwise in fp32, and the states' decays, keep expf.
__device__ inline float fast_exp(float x) { return __expf(x); }

/// \brief A chunk's gates in shared memory: g_cum (a scalar gate: column 0, its raw values in
/// column 1, and each row's e^{g_cum} and e^{gl - g_cum}). COMPACT: room for a scalar gate alone,
/// for kernels of scalar gates only.
template <int K, bool COMPACT = false> struct ChunkGates {
  static constexpr int LG = COMPACT ? 2 : K + 8;
  alignas(16) float g[C][LG]; // 16-byte aligned: copy_gates_async copies 4 gates at once
  float row_up[C], row_to_end[C];
};

/// chunk_local_cumsum of the chunk's rows into `s` (bitwise the CUDA-core kernel's: each gate
/// column summed in row order; rows past n flat), from the chunk's raw gates already in s.g
/// (copy_gates_async, its copies waited for), written to g_cum_out too when given (a per-key
/// gate's rows ld_g values apart). Called by the whole block; starts and ends
/// synchronised.
template <int K, bool SCALAR, bool COMPACT>
__device__ void sum_chunk_gates(ChunkGates<K, COMPACT> &s, ChunkRows rows, int hd,
                                const ChunkDims &d, float *g_cum_out, int ld_g = K) {
  const int tid = threadIdx.x, n = rows.n, last = n - 1;
  __syncthreads();
  if constexpr (SCALAR) {
    if (tid < C) { // row tid's g_cum (rows past n: gl's), and gl
      float acc = 0, gi = 0;
      for (int i = 0; i < n; ++i) {
        acc += s.g[i][1];
        if (i == min(tid, last))
          gi = acc;
      }
      s.g[tid][0] = gi;
      s.row_up[tid] = expf(gi);
      s.row_to_end[tid] = expf(acc - gi);
      if (g_cum_out && tid < n)
        g_cum_out[static_cast<long>(rows.bos + tid) * d.H + hd] = gi;
    }
  } else if (tid < K) { // column tid, summed down in place
    float acc = 0;
    for (int i = 0; i < C; ++i) {
      acc += s.g[i][tid];
      s.g[i][tid] = acc;
      if (g_cum_out && i < n)
        g_cum_out[(static_cast<long>(rows.bos + i) * d.H + hd) * ld_g + tid] = acc;
    }
  }
  __syncthreads();
}

/// The chunk's raw gates into s.g (a scalar gate: column 1), zeros past n, as copies (cp.async)
/// in the caller's open group: for a kernel that starts them ahead of its tiles', so that they do
/// not wait behind those; then, once that group is waited for, sum_chunk_gates. A per-key gate's
/// rows are ld_g values apart in g. Called by the whole block.
template <int K, bool SCALAR, bool COMPACT>
__device__ void copy_gates_async(ChunkGates<K, COMPACT> &s, const float *g, ChunkRows rows, int hd,
                                 const ChunkDims &d, int ld_g = K) {
  static_assert(SCALAR || !COMPACT, "a per-key gate needs K columns");
  const int tid = threadIdx.x, n = rows.n;
  const long first = static_cast<long>(rows.bos) * d.H + hd; // row bos of head hd
  if constexpr (SCALAR) {
    if (tid < C) // a row past n reads nothing (its place: the first row's)
      mma::copy_async<4>(&s.g[tid][1], g + first + (tid < n ? static_cast<long>(tid) * d.H : 0),
                         tid >= n);
  } else { // 4 a copy
    for (int e = tid; e < C * (K / 4); e += blockDim.x) {
      const int r = e / (K / 4), col = (e % (K / 4)) * 4;
      mma::copy_async<16>(
          &s.g[r][col], g + (first + static_cast<long>(r < n ? r : 0) * d.H) * ld_g + col, r >= n);
    }
  }
}

/// The decayed factors the sequential kernel takes (gpu/chunk_gla_tc.cu, chunk_gla_state_tc) of a
/// chunk's rows, from q and k in shared memory (ld values a row) and the chunk's gates: qd = q~ .
/// e^{g_cum} and kd = k . e^{gl - g_cum} in the input type, 8 values a store, and decay = e^{gl}
/// [NC, H, G] in fp32 (each only when given). Called by the whole block.
template <class In, int K, bool SCALAR, bool COMPACT>
__device__ void store_decayed_factors(const In *q, const In *k, int ld,
                                      const ChunkGates<K, COMPACT> &s, ChunkRows rows, int c,
                                      int hd, const ChunkDims &d, In *qd, In *kd, float *decay) {
  constexpr int G = SCALAR ? 1 : K;
  const int last = rows.n - 1;
  for (int e = threadIdx.x; (qd || kd) && e < rows.n * (K / 8); e += blockDim.x) {
    const int i = e / (K / 8), col0 = (e % (K / 8)) * 8;
    alignas(16) In xq[8];
    alignas(16) In xk[8];
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      const int col = col0 + u;
      const float qi = val(q[i * ld + col]) * d.scale, ki = val(k[i * ld + col]);
      if constexpr (SCALAR) {
        xq[u] = to<In>(qi * s.row_up[i]);
        xk[u] = to<In>(ki * s.row_to_end[i]);
      } else {
        xq[u] = to<In>(qi * fast_exp(s.g[i][col]));
        xk[u] = to<In>(ki * fast_exp(s.g[last][col] - s.g[i][col]));
      }
    }
    const long at = (static_cast<long>(rows.bos + i) * d.H + hd) * K + col0;
    if (qd)
      *reinterpret_cast<uint4 *>(qd + at) = *reinterpret_cast<const uint4 *>(xq);
    if (kd)
      *reinterpret_cast<uint4 *>(kd + at) = *reinterpret_cast<const uint4 *>(xk);
  }
  if (decay && threadIdx.x < G)
    decay[(static_cast<long>(c) * d.H + hd) * G + threadIdx.x] =
        expf(s.g[last][SCALAR ? 0 : threadIdx.x]);
}

/// A scalar gate's row factors in place of qd and kd, for a sequential kernel that scales in fp32
/// (TcStatePass::row_up): e^{g_cum} and e^{gl - g_cum} of each of the chunk's rows into row_up
/// and row_to_end [B*T, H] (fp32). Called by the whole block after sum_chunk_gates.
template <int K, bool COMPACT>
__device__ inline void store_row_factors(const ChunkGates<K, COMPACT> &s, ChunkRows rows, int hd,
                                         const ChunkDims &d, float *row_up, float *row_to_end) {
  const int i = threadIdx.x;
  if (row_up && i < rows.n) {
    const long at = (static_cast<long>(rows.bos) + i) * d.H + hd;
    row_up[at] = s.row_up[i];
    row_to_end[at] = s.row_to_end[i];
  }
}

/// The largest spread of a factored decay inside a sub-chunk's diagonal block: factors such as
/// k e^{spread} stay within the input type's range (fp16's largest value is 65504) for factors
/// of magnitude up to 21 in fp16 (65504 e^-8 = 21.97); spread_limit_for lowers it for larger ones.
template <class T> constexpr float spread_limit = 40.0f;
template <> constexpr float spread_limit<__half> = 8.0f;
/// fp16's largest finite value.
constexpr float half_max = 65504.0f;

/// The spread limit of a block whose up-scaled factors are at most `magnitude` in absolute value
/// (factor_magnitude): spread_limit<T>, and in fp16 at most log(65504 / magnitude), so that no
/// factor magnitude e^{spread} passes fp16's largest value (the rounding of the exp and the
/// product, a few fp32 ulps, stays far below the half ulp of 16 that would round 65504 up to
/// infinity). Unchanged for magnitudes up to 21.97; a magnitude past 65504 (none, in fp16) would
/// make every row of the block wide.
template <class T> __device__ inline float spread_limit_for(float magnitude) {
  if constexpr (std::is_same_v<T, __half>)
    return magnitude > 0.0f ? fminf(spread_limit<T>, logf(half_max / magnitude)) : spread_limit<T>;
  else
    return spread_limit<T>;
}

/// The largest |y_jc s_j| over the rows j in [row0, row0 + 16) and the W columns of y (stored by
/// rows, ld values a row; s_j = y_scale[j], or 1): the magnitude of the factors that the block's
/// decays scale up, for spread_limit_for. Every lane of the warp gets it; called by a whole warp.
/// Only fp16 needs it: in bf16 it is 0 and reads nothing.
template <class T, int W>
__device__ inline float factor_magnitude(const T *y, int ld, int row0,
                                         const float *y_scale = nullptr) {
  if constexpr (std::is_same_v<T, __half>) {
    const int lane = threadIdx.x % 32;
    float m = 0.0f;
    for (int i = row0; i < row0 + SUB; ++i) {
      const float s = y_scale ? fabsf(y_scale[i]) : 1.0f;
      for (int col = lane; col < W; col += 32)
        m = fmaxf(m, fabsf(val(y[i * ld + col])) * s);
    }
    for (int offset = 16; offset > 0; offset /= 2)
      m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, offset));
    return m;
  } else {
    return 0.0f;
  }
}

/// The rows i (bit i) of the 16 from row0 whose spread against row `ref` exceeds the limit on
/// some key: sign * (g_cum[ref] - g_cum[row0 + i]) > spread_limit_for<T>(magnitude), with
/// `magnitude` the factor_magnitude of the factors the block scales up. Called by a whole warp.
template <class T, int K>
__device__ inline unsigned wide_rows(const float (*g_cum)[ChunkGates<K>::LG], int row0, int ref,
                                     float sign, float magnitude) {
  const int lane = threadIdx.x % 32;
  const float limit = spread_limit_for<T>(magnitude);
  unsigned rows = 0;
  for (int i = 0; i < SUB; ++i) {
    bool wide = false;
    for (int col = lane; col < K; col += 32)
      wide = wide || sign * (g_cum[ref][col] - g_cum[row0 + i][col]) > limit;
    if (__any_sync(0xffffffffu, wide))
      rows |= 1u << i;
  }
  return rows;
}

/// The loop every warp product here runs: for each 16-deep step kk of [from, depth), the A
/// fragment load_a(a, kk) and every tile's B fragment first, then acc[nt] += a b[nt] for each tile
/// (tiles for which `take(nt)` is false skipped). The B fragments come a tile a load,
/// load_b(b[nt], nt, kk) (ldmatrix .x2); with PAIRS, two tiles a load, nt and nt + 1 for even nt,
/// load_b2(b[nt], b[nt + 1], nt, nt + 1, kk) (.x4), where both are taken. Pairs take 15 us off
/// simple_gla's sequential kernel (180 against 195 us a launch on an H100) but add 5 to 10% to the
/// scores, WY and backward kernels (reports/gpu/tensor_core.md, "Fewer instructions"): only the
/// sequential kernel asks for them. Loading the step's fragments before its products lets each
/// mma.sync find its operands in (ldmatrix and mma.sync are volatile asm, issued in the order
/// written); the sums are those of one product after another.
template <class T, bool PAIRS, int TILES, class LoadA, class LoadB, class LoadB2, class Take>
__device__ inline void warp_product(mma::Acc (&acc)[TILES], int from, int depth, LoadA load_a,
                                    LoadB load_b, LoadB2 load_b2, Take take) {
  for (int kk = from; kk < depth; kk += 16) {
    mma::FragA a;
    load_a(a, kk);
    mma::FragB b[TILES];
#pragma unroll
    for (int nt = 0; nt < TILES; ++nt) {
      if constexpr (!PAIRS) {
        if (take(nt))
          load_b(b[nt], nt, kk);
        continue;
      }
      if (nt % 2 != 0)
        continue; // the second of a pair
      const int pair = nt + 1;
      if (pair < TILES && take(nt) && take(pair)) {
        load_b2(b[nt], b[pair], nt, pair, kk);
      } else {
        if (take(nt))
          load_b(b[nt], nt, kk);
        if (pair < TILES && take(pair))
          load_b(b[pair], pair, kk);
      }
    }
#pragma unroll
    for (int nt = 0; nt < TILES; ++nt)
      if (take(nt))
        mma::mma(acc[nt], a, b[nt], T{});
  }
}
/// warp_product's load_b2 for a product without pairs (never called).
struct NoPairs {
  __device__ void operator()(mma::FragB &, mma::FragB &, int, int, int) const {}
};
/// warp_product's `take` for every tile.
struct EveryTile {
  __device__ bool operator()(int) const { return true; }
};

/// acc += rows [row0, row0 + 16) of `left` times rows [0, depth) of `right` (stored by rows),
/// columns [col0, col0 + 8 TILES); PAIRS: warp_product's loads of two tiles at once.
template <bool PAIRS = false, class T, int TILES>
__device__ inline void rows_times(mma::Acc (&acc)[TILES], const T *left, int ld_left, int row0,
                                  const T *right, int ld_right, int col0, int depth) {
  warp_product<T, PAIRS>(
      acc, 0, depth, [&](mma::FragA &a, int kk) { mma::load_a(a, left, ld_left, row0, kk); },
      [&](mma::FragB &b, int nt, int kk) {
        mma::load_b_rows(b, right, ld_right, kk, col0 + nt * 8);
      },
      [&](mma::FragB &b0, mma::FragB &b1, int n0, int n1, int kk) {
        mma::load_b_rows2(b0, b1, right, ld_right, kk, col0 + n0 * 8, col0 + n1 * 8);
      },
      EveryTile{});
}

/// acc += rows [row0, row0 + 16) of `left` times the transpose of `right` (stored by rows: its
/// rows [col0, col0 + 8 TILES) are the columns), over columns [0, depth) of both.
template <class T, int TILES>
__device__ inline void rows_times_transposed(mma::Acc (&acc)[TILES], const T *left, int ld_left,
                                             int row0, const T *right, int ld_right, int col0,
                                             int depth) {
  warp_product<T, false>(
      acc, 0, depth, [&](mma::FragA &a, int kk) { mma::load_a(a, left, ld_left, row0, kk); },
      [&](mma::FragB &b, int nt, int kk) { mma::load_b(b, right, ld_right, col0 + nt * 8, kk); },
      NoPairs{}, EveryTile{});
}

/// acc += rows [row0, row0 + 16) of the transpose of `left` (stored by rows: its columns
/// [row0, row0 + 16) are the rows) times `right` (stored by rows), over rows [from, depth) of
/// both, columns [col0, col0 + 8 TILES); PAIRS as rows_times'.
template <bool PAIRS = false, class T, int TILES>
__device__ inline void transposed_times_rows(mma::Acc (&acc)[TILES], const T *left, int ld_left,
                                             int row0, const T *right, int ld_right, int col0,
                                             int from, int depth) {
  warp_product<T, PAIRS>(
      acc, from, depth,
      [&](mma::FragA &a, int kk) { mma::load_a_transposed(a, left, ld_left, row0, kk); },
      [&](mma::FragB &b, int nt, int kk) {
        mma::load_b_rows(b, right, ld_right, kk, col0 + nt * 8);
      },
      [&](mma::FragB &b0, mma::FragB &b1, int n0, int n1, int kk) {
        mma::load_b_rows2(b0, b1, right, ld_right, kk, col0 + n0 * 8, col0 + n1 * 8);
      },
      EveryTile{});
}

/// The lower triangle of a C x C product, two warps a 16-row block: acc[nt] += rows [row0, row0
/// + 16) of `left` times the transpose of `right` (stored by rows) over [0, depth), for the
/// column tiles nt of parity `side` up to the diagonal block (the others stay zero).
template <class T>
__device__ inline void lower_rows_times_transposed(mma::Acc (&acc)[C / 8], const T *left,
                                                   int ld_left, int row0, const T *right,
                                                   int ld_right, int side, int depth) {
  warp_product<T, false>(
      acc, 0, depth, [&](mma::FragA &a, int kk) { mma::load_a(a, left, ld_left, row0, kk); },
      [&](mma::FragB &b, int nt, int kk) { mma::load_b(b, right, ld_right, nt * 8, kk); },
      NoPairs{}, [&](int nt) { return nt % 2 == side && nt < row0 / 8 + 2; });
}

/// \brief The lower triangles of a chunk's scores under per-key decays, S_ij = sum_c X_ic Y_jc
/// e^{g_cum_ic - g_cum_jc} (j <= i), for LEFT left matrices X = x[m] (scaled by x_scale[m]) against
/// the same Y, factored against the first row r = row0 of the warp's 16-row sub-chunk, two warps
/// a row block (lower_rows_times_transposed's tiles): acc[m][nt] += rows [row0, row0 + 16) of
/// (X_ic x_scale e^{g_cum_ic - g_cum_rc}) times (Y_jc e^{g_cum_r'c - g_cum_jc}), r' = r_right (r,
/// but for a planted bug), over keys [0, depth); both factors are built in registers, each decay
/// once for the LEFT left factors and once for the right factor of every tile, and rounded to the
/// input type as the operands of the product. The diagonal block's rows whose bit is set in
/// pairwise_rows are zero in the right factor (their factors could overflow: pairwise_scores
/// computes their entries). x, y stored by rows, ld values a row.
template <class T, int LEFT, int LG>
__device__ void factored_scores(mma::Acc (&acc)[LEFT][C / 8], const T *const (&x)[LEFT],
                                const float (&x_scale)[LEFT], const T *y, int ld,
                                const float (*g_cum)[LG], int row0, int side,
                                unsigned pairwise_rows, int r_right, int depth) {
  const int lane = threadIdx.x % 32, r = lane / 4, c = 2 * (lane % 4);
  for (int kk = 0; kk < depth; kk += 16) {
    mma::FragA a[LEFT]; // register h: row row0 + r + 8 (h & 1), keys kk + c + 8 (h >> 1), + 1
#pragma unroll
    for (int h = 0; h < 4; ++h) {
      const int i = row0 + r + 8 * (h & 1), col = kk + c + 8 * (h >> 1);
      const float down0 = fast_exp(g_cum[i][col] - g_cum[row0][col]);
      const float down1 = fast_exp(g_cum[i][col + 1] - g_cum[row0][col + 1]);
#pragma unroll
      for (int m = 0; m < LEFT; ++m)
        a[m].x[h] = mma::pack_rounded<T>(val(x[m][i * ld + col]) * x_scale[m] * down0,
                                         val(x[m][i * ld + col + 1]) * x_scale[m] * down1);
    }
#pragma unroll
    for (int nt = 0; nt < C / 8; ++nt)
      if (nt % 2 == side && nt < row0 / 8 + 2) {
        const int j = nt * 8 + r; // Y_jc e^{g_r' - g_j}, keys kk.. of row j
        const bool zero = j >= row0 && (pairwise_rows >> (j - row0) & 1u);
        mma::FragB b;
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int col = kk + c + 8 * half;
          const float y0 = val(y[j * ld + col]) * fast_exp(g_cum[r_right][col] - g_cum[j][col]);
          const float y1 =
              val(y[j * ld + col + 1]) * fast_exp(g_cum[r_right][col + 1] - g_cum[j][col + 1]);
          b.x[half] = zero ? 0u : mma::pack_rounded<T>(y0, y1);
        }
#pragma unroll
        for (int m = 0; m < LEFT; ++m)
          mma::mma(acc[m][nt], a[m], b, T{});
      }
  }
}

/// The B fragment (gpu/detail/mma.cuh) of rows [kk, kk + 16) of y (stored by rows, ld values a
/// row), this lane's column col, decayed against a reference gate: y_jc s_j e^{sign (g_cum_jc -
/// g_ref)} (s_j = row_scale[j], or 1 without one), in the input type; zero on the rows j of [row0,
/// row0 + 16) whose bit j - row0 is set in left_out (their factors could overflow: their terms are
/// summed apart).
template <class T, int LG>
__device__ inline mma::FragB decayed_rows(const T *y, int ld, const float (*g_cum)[LG], int kk,
                                          int col, float g_ref, float sign, int row0,
                                          unsigned left_out, const float *row_scale = nullptr) {
  const int lane = threadIdx.x % 32;
  mma::FragB b;
#pragma unroll
  for (int h2 = 0; h2 < 2; ++h2) {
    float x[2];
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      const int j = kk + 2 * (lane % 4) + 8 * h2 + u;
      const bool zero = j >= row0 && j < row0 + SUB && (left_out >> (j - row0) & 1u);
      const float s = row_scale ? row_scale[j] : 1.0f;
      x[u] = zero ? 0.0f : val(y[j * ld + col]) * s * fast_exp(sign * (g_cum[j][col] - g_ref));
    }
    b.x[h2] = mma::pack_rounded<T>(x[0], x[1]);
  }
  return b;
}

/// \brief Rows [row0, row0 + 16) of P_ic = sum_{j<i} L_ij y_jc s_j e^{g_cum_ic - g_cum_jc} under
/// per-key decays, for L strictly lower (stored by rows) and y stored by rows (s_j = y_scale[j],
/// or 1), columns [col0, col0 + 8 TILES), split at the sub-chunk's first row r = row0: acc += L
/// times the B factor y_j s_j e^{g_r - g_j}, at most |y_j s_j| below the diagonal block; the
/// block's rows j in `pairwise` (wide_rows of r, sign 1: a suffix, whose e^{g_r - g_j} passes
/// spread_limit) are left out of the product: lower_left_out sums their terms. With N matrices L
/// (lower[m], each ld_lower values a row) against the same y, each B factor is built once for all
/// N products, acc[m] the m-th.
template <class T, int N, int TILES, int LG>
__device__ inline void lower_decayed_products(mma::Acc (&acc)[N][TILES], const T *const (&lower)[N],
                                              int ld_lower, const T *y, int ld_y,
                                              const float (*g_cum)[LG], int row0, int col0,
                                              unsigned pairwise, const float *y_scale = nullptr) {
  const int lane = threadIdx.x % 32;
  for (int kk = 0; kk < row0 + SUB; kk += 16) {
    mma::FragA a[N];
#pragma unroll
    for (int m = 0; m < N; ++m)
      mma::load_a(a[m], lower[m], ld_lower, row0, kk);
#pragma unroll
    for (int nt = 0; nt < TILES; ++nt) {
      const int col = col0 + nt * 8 + lane / 4;
      const mma::FragB b =
          decayed_rows(y, ld_y, g_cum, kk, col, g_cum[row0][col], -1.0f, row0, pairwise, y_scale);
#pragma unroll
      for (int m = 0; m < N; ++m)
        mma::mma(acc[m][nt], a[m], b, T{});
    }
  }
}
/// lower_decayed_products of one matrix L.
template <class T, int TILES, int LG>
__device__ inline void lower_decayed_product(mma::Acc (&acc)[TILES], const T *lower, int ld_lower,
                                             const T *y, int ld_y, const float (*g_cum)[LG],
                                             int row0, int col0, unsigned pairwise,
                                             const float *y_scale = nullptr) {
  const T *const one[1] = {lower};
  lower_decayed_products(reinterpret_cast<mma::Acc(&)[1][TILES]>(acc), one, ld_lower, y, ld_y,
                         g_cum, row0, col0, pairwise, y_scale);
}
/// The terms of lower_decayed_product's P that it left out (the rows j in `pairwise`, j < i), for
/// each of this lane's accumulator entries (tile nt, entry e: row row0 + acc_row(e), column col0 +
/// 8 nt + acc_col(e)) into left_out[4 nt + e], each term with its own exp, in fp32. One loop over
/// the entries, not unrolled: it runs only under extreme gates, and written out at every entry it
/// would multiply the kernel's code. The entry of P is then e^{g_i - g_r} acc + left_out.
template <class T, int N, int LG>
__device__ inline void lower_left_out(float (&left_out)[N], const T *lower, int ld_lower,
                                      const T *y, int ld_y, const float (*g_cum)[LG], int row0,
                                      int col0, unsigned pairwise, const float *y_scale = nullptr) {
  const int first = row0 + __ffs(pairwise) - 1;
#pragma unroll 1
  for (int m = 0; m < N; ++m) {
    const int i = row0 + mma::acc_row(m % 4), col = col0 + m / 4 * 8 + mma::acc_col(m % 4);
    const float gi = g_cum[i][col];
    float p = 0;
    for (int j = first; j < i; ++j)
      p += val(lower[i * ld_lower + j]) * val(y[j * ld_y + col]) * (y_scale ? y_scale[j] : 1.0f) *
           expf(gi - g_cum[j][col]);
    left_out[m] = p;
  }
}

/// Entry m = 4 nt + e (row i, column col) of lower_decayed_product's P from its accumulator acc:
/// e^{g_i - g_r} acc, plus lower_left_out's terms where the block has pairwise rows.
template <int LG>
__device__ inline float lower_decayed_entry(float acc, const float (*g_cum)[LG], int row0, int i,
                                            int col, unsigned pairwise, const float *left_out,
                                            int m) {
  const float p = fast_exp(g_cum[i][col] - g_cum[row0][col]) * acc;
  return pairwise ? p + left_out[m] : p;
}

/// \brief Rows [row0, row0 + 16) of R_jc = sum_{i>j} L_ij y_ic s_i e^{g_cum_ic - g_cum_jc} (the
/// transposed product of lower_decayed_product's L), split at the sub-chunk's last row r' = row0 +
/// 15: acc += L^T times the B factor y_i s_i e^{g_i - g_r_right} (r_right is r', but for a planted
/// bug), at most |y_i s_i| past the diagonal block; the block's rows i in `pairwise` (wide_rows of
/// r', sign -1: a prefix) are left out: upper_left_out sums their terms. With N matrices L, as
/// lower_decayed_products.
template <class T, int N, int TILES, int LG>
__device__ inline void
upper_decayed_products(mma::Acc (&acc)[N][TILES], const T *const (&lower)[N], int ld_lower,
                       const T *y, int ld_y, const float (*g_cum)[LG], int row0, int col0,
                       unsigned pairwise, int r_right, const float *y_scale = nullptr) {
  const int lane = threadIdx.x % 32;
  for (int kk = row0; kk < C; kk += 16) {
    mma::FragA a[N];
#pragma unroll
    for (int m = 0; m < N; ++m)
      mma::load_a_transposed(a[m], lower[m], ld_lower, row0, kk);
#pragma unroll
    for (int nt = 0; nt < TILES; ++nt) {
      const int col = col0 + nt * 8 + lane / 4;
      const mma::FragB b =
          decayed_rows(y, ld_y, g_cum, kk, col, g_cum[r_right][col], 1.0f, row0, pairwise, y_scale);
#pragma unroll
      for (int m = 0; m < N; ++m)
        mma::mma(acc[m][nt], a[m], b, T{});
    }
  }
}
/// upper_decayed_products of one matrix L.
template <class T, int TILES, int LG>
__device__ inline void upper_decayed_product(mma::Acc (&acc)[TILES], const T *lower, int ld_lower,
                                             const T *y, int ld_y, const float (*g_cum)[LG],
                                             int row0, int col0, unsigned pairwise, int r_right,
                                             const float *y_scale = nullptr) {
  const T *const one[1] = {lower};
  upper_decayed_products(reinterpret_cast<mma::Acc(&)[1][TILES]>(acc), one, ld_lower, y, ld_y,
                         g_cum, row0, col0, pairwise, r_right, y_scale);
}
/// The terms of upper_decayed_product's R that it left out (the rows i in `pairwise`, i > j), for
/// each of this lane's accumulator entries into left_out[4 nt + e], as lower_left_out. The entry
/// of R is then e^{g_r' - g_j} acc + left_out.
template <class T, int N, int LG>
__device__ inline void upper_left_out(float (&left_out)[N], const T *lower, int ld_lower,
                                      const T *y, int ld_y, const float (*g_cum)[LG], int row0,
                                      int col0, unsigned pairwise, const float *y_scale = nullptr) {
  const int last = row0 + 31 - __clz(pairwise);
#pragma unroll 1
  for (int m = 0; m < N; ++m) {
    const int j = row0 + mma::acc_row(m % 4), col = col0 + m / 4 * 8 + mma::acc_col(m % 4);
    const float gj = g_cum[j][col];
    float r = 0;
    for (int i = j + 1; i <= last; ++i)
      r += val(lower[i * ld_lower + j]) * val(y[i * ld_y + col]) * (y_scale ? y_scale[i] : 1.0f) *
           expf(g_cum[i][col] - gj);
    left_out[m] = r;
  }
}

/// Entry m = 4 nt + e (row j, column col) of upper_decayed_product's R from its accumulator acc:
/// e^{g_r' - g_j} acc, plus upper_left_out's terms where the block has pairwise rows.
template <int LG>
__device__ inline float upper_decayed_entry(float acc, const float (*g_cum)[LG], int row0, int j,
                                            int col, unsigned pairwise, const float *left_out,
                                            int m) {
  const float r = fast_exp(g_cum[row0 + SUB - 1][col] - g_cum[j][col]) * acc;
  return pairwise ? r + left_out[m] : r;
}

/// Sums over the lanes of a quad: a row's part of a warp's accumulators is spread over 4 lanes.
__device__ inline float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}
/// Sums over the lanes of a column: the 8 lanes of the same lane % 4 hold a column's rows.
__device__ inline float column_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 4);
  x += __shfl_xor_sync(0xffffffffu, x, 8);
  return x + __shfl_xor_sync(0xffffffffu, x, 16);
}
/// sum + a[0] b[0] + ... + a[7] b[7] in fp32, in that order, over the 8 16-bit values at a and
/// at b (each 16-byte aligned, in shared or global memory): one 16-byte load of each.
template <class T> __device__ inline float plus_products8(float sum, const T *a, const T *b) {
  alignas(16) T x[8], y[8];
  *reinterpret_cast<uint4 *>(x) = *reinterpret_cast<const uint4 *>(a);
  *reinterpret_cast<uint4 *>(y) = *reinterpret_cast<const uint4 *>(b);
#pragma unroll
  for (int u = 0; u < 8; ++u)
    sum += val(x[u]) * val(y[u]);
  return sum;
}
__device__ inline float warp_sum(float x) {
#pragma unroll
  for (int lanes = 16; lanes > 0; lanes /= 2)
    x += __shfl_xor_sync(0xffffffffu, x, lanes);
  return x;
}

/// The pair (i, j), j <= i < 16, numbered p = i (i + 1) / 2 + j.
__device__ inline void pair_of(int p, int &i, int &j) {
  i = static_cast<int>((sqrtf(8.0f * p + 1.0f) - 1.0f) * 0.5f);
  while (i * (i + 1) / 2 > p)
    --i;
  while ((i + 1) * (i + 2) / 2 <= p)
    ++i;
  j = p - i * (i + 1) / 2;
}

/// The entries (i, j <= i) of the diagonal block's rows in `rows` (bit i: row row0 + i), each
/// term with its own exp, in fp32: store(i, j, x_scale sum_c X_ic Y_jc e^{g_cum_ic - g_cum_jc})
/// for X, Y stored by rows (ld values a row), each lane summing its pairs over the K keys. Called
/// by one warp.
template <class T, int K, int LG, class F>
__device__ void pairwise_scores(const T *x, const T *y, int ld, const float (*g_cum)[LG], int row0,
                                unsigned rows, float x_scale, F store) {
  constexpr int PAIRS = SUB * (SUB + 1) / 2, PER_LANE = (PAIRS + 31) / 32;
  const int lane = threadIdx.x % 32;
  int pi[PER_LANE], pj[PER_LANE];
  float acc[PER_LANE];
#pragma unroll
  for (int m = 0; m < PER_LANE; ++m) {
    pair_of(min(lane + 32 * m, PAIRS - 1), pi[m], pj[m]);
    pi[m] += row0;
    pj[m] += row0;
    acc[m] = 0;
  }
  for (int col = 0; col < K; ++col)
#pragma unroll
    for (int m = 0; m < PER_LANE; ++m)
      acc[m] += val(x[pi[m] * ld + col]) * x_scale * val(y[pj[m] * ld + col]) *
                expf(g_cum[pi[m]][col] - g_cum[pj[m]][col]);
#pragma unroll
  for (int m = 0; m < PER_LANE; ++m)
    if (lane + 32 * m < PAIRS && (rows >> (pi[m] - row0) & 1u))
      store(pi[m], pj[m], acc[m]);
}

/// f(nt, e, i, j) for each place of this lane's accumulators in the column tiles of parity `side`
/// (lower_rows_times_transposed's): tile nt, entry e, row i, column j; unrolled, so that nt and e
/// index the caller's accumulators and SideGates as constants.
template <class F> __device__ inline void each_place_of_side(int row0, int side, F f) {
#pragma unroll
  for (int nt = 0; nt < C / 8; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      if (nt % 2 == side)
        f(nt, e, row0 + mma::acc_row(e), nt * 8 + mma::acc_col(e));
}

/// f(i, j, x) for each accumulator entry (row i, column j, value x) of the column tiles of parity
/// `side` (lower_rows_times_transposed's), on this lane.
template <class F>
__device__ inline void each_entry_of_side(const mma::Acc (&acc)[C / 8], int row0, int side, F f) {
  each_place_of_side(row0, side, [&](int nt, int e, int i, int j) { f(i, j, acc[nt].x[e]); });
}

/// The scores scale q k^T . D of a per-key gate (gla's A, the delta rules' Aqk) at a warp's rows
/// [row0, row0 + 16) and the column tiles of parity `side`: factored against the reference row
/// r_right (row0, as factored_scores says), then the block's wide rows summed term by term
/// (pairwise_scores); each entry given to put(i, j, y), zero above the diagonal, a wide row's
/// entries twice (the second the one to keep). q and k: the chunk's tiles (LK values a row).
/// Called by the whole block: a barrier between the two.
template <class In, int K, int LG, class Put>
__device__ void per_key_scores(const In *q, const In *k, int LK, const float (*g_cum)[LG], int row0,
                               int side, int r_right, float scale, Put put) {
  const unsigned pairwise_rows =
      wide_rows<In, K>(g_cum, row0, row0, 1.0f, factor_magnitude<In, K>(k, LK, row0));
  mma::Acc acc[1][C / 8];
  const In *const left[1] = {q};
  const float left_scale[1] = {scale};
  factored_scores(acc, left, left_scale, k, LK, g_cum, row0, side, pairwise_rows, r_right, K);
  each_entry_of_side(acc[0], row0, side,
                     [&](int i, int j, float y) { put(i, j, j <= i ? y : 0.0f); });
  __syncthreads(); // the block's factored entries are in; its pairwise rows replace them
  if (pairwise_rows && side == 0)
    pairwise_scores<In, K>(q, k, LK, g_cum, row0, pairwise_rows, scale, put);
}

/// A scalar gate's g_cum at this lane's rows and columns of each_entry_of_side (tile nt of parity
/// `side`, entry e: row row0 + acc_row(e), column nt * 8 + acc_col(e)), read into registers once,
/// so that a loop storing the entries into shared memory rereads no gate between its stores; and
/// the decay e^{g_cum_i - g_cum_j} of an entry, one exp (not masked above the diagonal, where it
/// may be infinite: the caller masks it).
struct SideGates {
  float row[2];         // rows row0 + acc_row(0), row0 + acc_row(2)
  float col[C / 16][2]; // columns (2 t + side) 8 + acc_col(0), + 1
  __device__ float decay(int nt, int e) const { return fast_exp(row[e / 2] - col[nt / 2][e % 2]); }
};
template <int LG>
__device__ inline SideGates side_gates(const float (*g_cum)[LG], int row0, int side) {
  SideGates x;
  x.row[0] = g_cum[row0 + mma::acc_row(0)][0];
  x.row[1] = g_cum[row0 + mma::acc_row(2)][0];
#pragma unroll
  for (int t = 0; t < C / 16; ++t)
#pragma unroll
    for (int u = 0; u < 2; ++u)
      x.col[t][u] = g_cum[(2 * t + side) * 8 + mma::acc_col(u)][0];
  return x;
}

/// A warp's column parity, given as an int or as a std::integral_constant (scalar_scores_out).
__device__ inline int side_value(int side) { return side; }
template <int SIDE> __device__ constexpr int side_value(std::integral_constant<int, SIDE>) {
  return SIDE;
}

/// A scalar gate's scores scale (q~ k^T) . D, D_ij = e^{g_cum_i - g_cum_j} (gla's A, the delta
/// rules' Aqk), of a warp's rows [row0, row0 + 16) and its column tiles of parity `side`
/// (lower_rows_times_transposed's) over K keys, one exp per (row, column), zero above the
/// diagonal (on it too where `diagonal` is false: gpu_check_planted's bug), stored from the
/// accumulators to A16 in the input type and, when given, to A_out in fp32, two values of a row a
/// store, rows past n left alone; nothing stored where A16 is null. `side`: an int, or a
/// std::integral_constant where it is known when compiled, so that the other parity's
/// accumulators take no registers. q and k: the chunk's tiles (LK values a row).
template <class In, int K, int LG, class Side>
__device__ void scalar_scores_out(const In *q, const In *k, int LK, const float (*g_cum)[LG],
                                  int row0, Side side, ChunkRows rows, int hd, const ChunkDims &d,
                                  In *A16, float *A_out = nullptr, bool diagonal = true) {
  const int parity = side_value(side);
  mma::Acc acc[C / 8];
  lower_rows_times_transposed(acc, q, LK, row0, k, LK, parity, K);
  const SideGates side_g = side_gates(g_cum, row0, parity);
  const auto score = [&](int i, int j, float x, float decay_ij) {
    return (diagonal ? j <= i : j < i) ? x * d.scale * decay_ij : 0.0f;
  };
  each_place_of_side(row0, parity, [&](int nt, int e, int i, int j) {
    if (A16 && e % 2 == 0 && i < rows.n) { // entries e and e + 1: columns j and j + 1 of row i
      const float a0 = score(i, j, acc[nt].x[e], side_g.decay(nt, e)),
                  a1 = score(i, j + 1, acc[nt].x[e + 1], side_g.decay(nt, e + 1));
      const long at = at_score(rows.bos + i, hd, j, d);
      *reinterpret_cast<std::uint32_t *>(A16 + at) = mma::pack_rounded<In>(a0, a1);
      if (A_out)
        *reinterpret_cast<float2 *>(A_out + at) = make_float2(a0, a1);
    }
  });
}

/// Stores the accumulators of rows [row0, row0 + 16), columns [col0, col0 + 8 TILES) of a
/// [rows, H, width] tensor at dst (rows < n only), each value mapped by f(row, column, value)
/// and rounded to T.
template <class T, int TILES, class F>
__device__ inline void store_rows(T *dst, const mma::Acc (&acc)[TILES], int row0, int col0, int n,
                                  long row_at, long stride, F f) {
#pragma unroll
  for (int nt = 0; nt < TILES; ++nt)
#pragma unroll
    for (int e = 0; e < 4; e += 2) {
      const int i = row0 + mma::acc_row(e), col = col0 + nt * 8 + mma::acc_col(e);
      if (i < n) // the two values of a row in one 4-byte store (col is even)
        *reinterpret_cast<std::uint32_t *>(dst + (row_at + static_cast<long>(i) * stride) + col) =
            mma::pack_rounded<T>(f(i, col, acc[nt].x[e]), f(i, col + 1, acc[nt].x[e + 1]));
    }
}

/// The fp32 places of unit_lower_inverse: A (rows 16-byte aligned) and the partial sums of one
/// block diagonal.
struct LowerInverse {
  static constexpr int LA = C + 4, LP = SUB + 4;
  float a[C][LA];
  float part[C / SUB - 1][SUB][LP];
};

/// A = (I + A0)^-1 of the unit lower triangular I + A0 (a0 strictly lower, zero elsewhere), in
/// fp32, every entry (i, j) also handed to put(i, j, A_ij) once final (zeros above the diagonal
/// included, when the group has more than four warps): the four 16-row diagonal blocks by forward
/// substitution, a warp a block and a lane a column held in registers; then the blocks below them
/// one block diagonal at a time, P_IJ = sum_{J <= M < I} A0_IM A_MJ and A_IJ = -A_II P_IJ, a
/// thread four adjacent entries of ROWS rows (ROWS = 2: a warp a block, each shared load of four
/// entries of a row of A or P serving 8 products in place of 4, on half the threads; the same
/// sums in the same order either way). A0 is held by rows (a0[i][j] = A0_ij) or, with
/// BY_COLUMNS, by columns (a0[j][i] = A0_ij: a kernel whose stores from k k^T's accumulators are
/// then free of bank conflicts); the same values either way. Called by a group of
/// `threads` threads (at least 128, a multiple of 32; `tid` this thread's place in it),
/// synchronised by `sync`: by default the whole block and __syncthreads. Ends synchronised.
template <int ROWS = 1, bool BY_COLUMNS = false, int LF, class Put, class Sync>
__device__ void unit_lower_inverse(const float (*a0)[LF], LowerInverse &s, Put put, int tid,
                                   int threads, Sync sync) {
  static_assert(ROWS == 1 || ROWS == 2, "one or two rows a thread");
  constexpr int BLOCKS = C / SUB;
  const int warp = tid / 32, lane = tid % 32;
  const auto a0_at = [a0](int i, int j) { return BY_COLUMNS ? a0[j][i] : a0[i][j]; }; // A0_ij
  if (warp < BLOCKS && lane < SUB) { // diagonal block `warp`, column lane
    const int r0 = SUB * warp, jj = lane;
    float x[SUB];
#pragma unroll
    for (int i = 0; i < SUB; ++i) {
      float y = 0;
#pragma unroll
      for (int m = 0; m < i; ++m)
        y += a0_at(r0 + i, r0 + m) * x[m];
      x[i] = i == jj ? 1.0f : (i < jj ? 0.0f : -y);
    }
#pragma unroll
    for (int i = 0; i < SUB; ++i) {
      s.a[r0 + i][r0 + jj] = x[i];
      put(r0 + i, r0 + jj, x[i]);
    }
  } else if (warp >= BLOCKS) { // the zeros above the diagonal blocks
    for (int e = tid - 32 * BLOCKS; e < C * C; e += threads - 32 * BLOCKS) {
      const int i = e / C, j = e % C;
      if (j / SUB > i / SUB)
        put(i, j, 0.0f);
    }
  }
  sync();
#pragma unroll
  for (int dist = 1; dist < BLOCKS; ++dist) {
    // (block b of the diagonal, rows r + (16 / ROWS) h for h < ROWS, columns c0..c0 + 3) of
    // each of the group's items, 64 / ROWS a block: ROWS rows a load of A (or P), each entry's
    // sum in the order of m in one accumulator
    constexpr int ITEMS = 64 / ROWS, STRIDE = SUB / ROWS;
    for (int item = tid; item < (BLOCKS - dist) * ITEMS; item += threads) {
      const int b = item / ITEMS, r = (item % ITEMS) / 4, c0 = 4 * (item % 4);
      const int I = b + dist, J = b; // P_IJ, rows r + STRIDE h, columns c0..c0 + 3
      float4 p[ROWS] = {};
#pragma unroll
      for (int m = 0; m < SUB * dist; ++m) {
        const float4 y = *reinterpret_cast<const float4 *>(&s.a[SUB * J + m][SUB * J + c0]);
#pragma unroll
        for (int h = 0; h < ROWS; ++h) {
          const float x = a0_at(SUB * I + r + STRIDE * h, SUB * J + m);
          p[h].x += x * y.x, p[h].y += x * y.y, p[h].z += x * y.z, p[h].w += x * y.w;
        }
      }
#pragma unroll
      for (int h = 0; h < ROWS; ++h)
        *reinterpret_cast<float4 *>(&s.part[b][r + STRIDE * h][c0]) = p[h];
    }
    sync();
    for (int item = tid; item < (BLOCKS - dist) * ITEMS; item += threads) {
      const int b = item / ITEMS, r = (item % ITEMS) / 4, c0 = 4 * (item % 4);
      const int I = b + dist, J = b; // A_IJ = -A_II P_IJ (A_II zero above its diagonal)
      float4 y[ROWS] = {};
#pragma unroll
      for (int m = 0; m < SUB; ++m) {
        const float4 z = *reinterpret_cast<const float4 *>(&s.part[b][m][c0]);
#pragma unroll
        for (int h = 0; h < ROWS; ++h) {
          const float x = s.a[SUB * I + r + STRIDE * h][SUB * I + m];
          y[h].x += x * z.x, y[h].y += x * z.y, y[h].z += x * z.z, y[h].w += x * z.w;
        }
      }
#pragma unroll
      for (int h = 0; h < ROWS; ++h) {
        const int i = SUB * I + r + STRIDE * h;
        const float out[4] = {-y[h].x, -y[h].y, -y[h].z, -y[h].w};
        *reinterpret_cast<float4 *>(&s.a[i][SUB * J + c0]) =
            make_float4(out[0], out[1], out[2], out[3]);
#pragma unroll
        for (int u = 0; u < 4; ++u)
          put(i, SUB * J + c0 + u, out[u]);
      }
    }
    sync();
  }
}
/// unit_lower_inverse by the whole block (at least 192 threads).
template <int ROWS = 1, bool BY_COLUMNS = false, int LF, class Put>
__device__ void unit_lower_inverse(const float (*a0)[LF], LowerInverse &s, Put put) {
  unit_lower_inverse<ROWS, BY_COLUMNS>(a0, s, put, threadIdx.x, blockDim.x,
                                       [] { __syncthreads(); });
}

/// out = rows [row0, row0 + 16) of A (a16, ld_a values a row) times `right` (C x W, stored by
/// rows), the warp's half `side` of the W columns, in the input type; and, when `stage` is given,
/// the same values as the input type holds them, in fp32. out and stage [B*T, H, W], row_at the
/// offset of the chunk's first row.
template <class In, int W>
__device__ void a_times(const In *a16, int ld_a, const In *right, int ld_right, int row0, int side,
                        ChunkRows rows, long row_at, int H, In *out, float *stage) {
  mma::Acc acc[W / 16];
  rows_times(acc, a16, ld_a, row0, right, ld_right, W / 2 * side, row0 + SUB);
  store_rows(out, acc, row0, W / 2 * side, rows.n, row_at * W, static_cast<long>(H) * W,
             [](int, int, float y) { return y; });
  if (stage)
#pragma unroll
    for (int nt = 0; nt < W / 16; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int i = row0 + mma::acc_row(e), col = W / 2 * side + nt * 8 + mma::acc_col(e);
        if (i < rows.n)
          stage[(row_at + static_cast<long>(i) * H) * W + col] = val(to<In>(acc[nt].x[e]));
      }
}

/// Rows [0, n) of a tile of W 16-bit values a row in shared memory (src, ld values a row) out to
/// dst, row i at dst + row_at + i stride, 8 values a store. Called by the whole block.
template <class In, int W>
__device__ void store_tile(In *dst, const In *src, int ld, int n, long row_at, long stride) {
  for (int e = threadIdx.x; e < n * (W / 8); e += blockDim.x) {
    const int i = e / (W / 8), j0 = (e % (W / 8)) * 8;
    *reinterpret_cast<uint4 *>(dst + row_at + i * stride + j0) =
        *reinterpret_cast<const uint4 *>(src + i * ld + j0);
  }
}

/// A chunk's C x C matrix in shared memory (ld LC) out to dst [B*T, H, C], rows < n. Called by the
/// whole block.
template <class In, int LC>
__device__ void store_scores(In *dst, const In (*a)[LC], ChunkRows rows, int hd,
                             const ChunkDims &d) {
  store_tile<In, C>(dst, &a[0][0], LC, rows.n, at_score(rows.bos, hd, 0, d),
                    static_cast<long>(d.H) * C);
}

} // namespace ruleproof::gpu::detail::tc
