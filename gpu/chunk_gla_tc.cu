// ruleproof: the chunkwise GLA forward on tensor cores (gla: per-key gate; simple_gla: scalar
// gate), Hopper (sm_90). The path KernelPath::tensor_cores of chunk_gla_fwd (gpu/chunk_gla.hpp);
// the CUDA-core path is gpu/chunk_gla.cu. Every matrix product runs as mma.sync m16n8k16 with
// operands in the input type (bf16 or fp16) and fp32 sums (gpu/detail/mma.cuh); gates, their
// exponentials and the running state stay fp32. Judged under the tensor-core policy
// (gpu/twin.hpp).
//
// CPU reference, one grep away: reference/gla/chunk.hpp (chunk_forward_pass: the scores, the
// output and the state passed on, of each chunk) and reference/shared/chunk.hpp
// (chunk_local_cumsum, ChunkDecay); simple_gla is gla with its gate repeated over the keys
// (reference/simple_gla/simple_gla.hpp).
//
// Two kernels. Per chunk of n <= 64 rows, g_cum its local cumulative gate, q~ = scale q, gl =
// g_cum of row n - 1 (rows past n are read as zeros, their gates as 0, so g_cum stays flat):
//   A_ij  = sum_c q~_ic k_jc exp(g_cum_ic - g_cum_jc)    (j <= i)                 [scores]
//   o_i   = (q~_i . e^{g_cum_i}) h + sum_{j<=i} A_ij v_j                         [chunk_fwd_o]
//   h'    = Diag(e^{gl}) h + (K . e^{gl - g_cum})^T V                            [chunk_fwd_h]
// chunk_gla_scores_tc_kernel: grid (NC, H), 8 warps, every chunk at once: g_cum, the scores A,
// and the two decayed factors qd = q~ . e^{g_cum} and kd = k . e^{gl - g_cum}, all three stored in
// the input type (the operands of the products that read them), with e^{gl} in fp32; two warps
// share each 16-row block of the scores.
// chunk_gla_fwd_tc_kernel: grid (N, H, V / 64), 8 warps; the block walks its sequence's chunks in
// order with its K x 64 tile of the state in the warps' accumulators, so that h never leaves the
// chip (the state update and the output fused), each chunk's qd, kd, v and A copied in (cp.async)
// while the block works on the one before: nothing but tensor-core products and one decay per
// state row in its loop.
//
// The scores' decays, per key (gla), where no exp may overflow however strong the gates:
// rows fall into four 16-row sub-chunks; for row i of sub-chunk I, the reference row r = 16 I (the
// first of I) splits each term as
//   (q~_ic e^{g_cum_ic - g_cum_rc}) (k_jc e^{g_cum_rc - g_cum_jc}),
// both factors rounded to the input type, as the tensor-core twin rounds its factored operands.
// Below I's diagonal block (j < r <= i) both exponents are <= 0, since g_cum falls down the chunk
// (g <= 0): each factor is at most |q~_ic| or |k_jc|, and an exponential that underflows to zero
// stands for a term below fp32's smallest normal number times |q~ k|. Inside the diagonal block
// (r <= j <= i) the right factor's exponent is g_cum_rc - g_cum_jc <= g_cum_rc - g_cum_ic, row i's
// own spread: row i is factored there when its spread is at most SPREAD (8 for fp16, whose largest
// value is 65504; 40 for bf16) on every key, so that no factor exceeds e^SPREAD |k| (in fp16,
// below 65504 while |k| < 21: keys larger than that, under gates that strong, would overflow;
// gpu/tests/twin_tests.cpp shows a limit of 40 overflowing fp16 at |k| <= 1); the rows past
// it (the factored rows are a prefix, and deciding row by row keeps the output causal to the last
// bit, as reference/shared/chunk.hpp's ChunkDecay does) take each term's exp(g_cum_ic - g_cum_jc)
// <= 1 on CUDA cores, in fp32. So the extreme-gate properties (gates near 0: every decay 1, the
// scores plain q~ k^T; gates near -inf: every decay 0, each row its own term) hold as for the
// CUDA-core kernels. e^{g_cum} <= 1 and e^{gl - g_cum} <= 1 likewise.
// simple_gla's scalar gate needs no split: A = (q~ k^T) . exp(g_cum_i - g_cum_j), one exp per
// (row, column), on the tensor-core product of the plain q~ and k.
#include "detail/chunk_device.cuh" // load, at_k, at_v, at_state, at_score, chunk_rows, check_sync,
                                   // allow_shared_memory, with_input_type, in, out, C, MAX_K
#include "detail/gla_launch.hpp"
#include "detail/mma.cuh"

namespace ruleproof::gpu::detail {

namespace {

constexpr int PAD = 8;    // 16-bit values each shared row is padded by (16 bytes)
constexpr int SUB = 16;   // rows of a sub-chunk
constexpr int TC_BV = 64; // value columns of a block of the sequential kernel

template <class T> __device__ inline T to(float x);
template <> __device__ inline __nv_bfloat16 to(float x) { return __float2bfloat16_rn(x); }
template <> __device__ inline __half to(float x) { return __float2half_rn(x); }
__device__ inline float val(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ inline float val(__half x) { return __half2float(x); }

/// Rows [0, n) of a [rows, H, width] tensor's head hd, columns [c0, c0 + width_here), into
/// dst (ld values a row), 16 bytes a load; rows [n, C) zero.
template <class T>
__device__ inline void stage_rows(T *dst, int ld, const T *src, int bos, int n, int hd, int H,
                                  int width, int c0, int width_here) {
  constexpr int PER = 16 / sizeof(T);
  const int vectors = width_here / PER;
  for (int e = threadIdx.x; e < C * vectors; e += blockDim.x) {
    const int r = e / vectors, col = (e % vectors) * PER;
    uint4 x = make_uint4(0, 0, 0, 0);
    if (r < n)
      x = *reinterpret_cast<const uint4 *>(src + (static_cast<long>(bos + r) * H + hd) * width +
                                           c0 + col);
    *reinterpret_cast<uint4 *>(dst + r * ld + col) = x;
  }
}

/// \brief A chunk's gates in shared memory: g_cum (a scalar gate: column 0, its raw values in
/// column 1, and each row's e^{g_cum} and e^{gl - g_cum}).
template <int K> struct ChunkGates {
  static constexpr int LG = K + 8;
  float g[C][LG];
  float row_up[C], row_to_end[C];
};

/// chunk_local_cumsum of the chunk's rows into `s` (bitwise the CUDA-core kernel's: each gate
/// column summed in row order; rows past n flat), written to g_cum_out too when given. Called
/// by the whole block; ends synchronised.
template <int K, bool SCALAR>
__device__ void chunk_gates(ChunkGates<K> &s, const float *g, ChunkRows rows, int hd,
                            const ChunkDims &d, float *g_cum_out) {
  const int tid = threadIdx.x, n = rows.n, last = n - 1;
  if (SCALAR) {
    if (tid < C)
      s.g[tid][1] = tid < n ? g[static_cast<long>(rows.bos + tid) * d.H + hd] : 0.0f;
  } else { // 4 a load; zeros past n
    for (int e = tid; e < C * (K / 4); e += blockDim.x) {
      const int r = e / (K / 4), col = (e % (K / 4)) * 4;
      float4 x = make_float4(0, 0, 0, 0);
      if (r < n)
        x = *reinterpret_cast<const float4 *>(g + (static_cast<long>(rows.bos + r) * d.H + hd) * K +
                                              col);
      *reinterpret_cast<float4 *>(&s.g[r][col]) = x;
    }
  }
  __syncthreads();
  if (SCALAR) {
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
        g_cum_out[(static_cast<long>(rows.bos + i) * d.H + hd) * K + tid] = acc;
    }
  }
  __syncthreads();
}

// ---------------------------------------------------------------------------------------
// chunk_gla_scores_tc: grid (NC, H), SCORE_THREADS threads, sizeof(ScoreShared<In, K>) bytes of
// dynamic shared memory. Writes A16 [B*T, H, C] (zero above the diagonal), qd and kd (q's
// shape), all in the input type; decay [NC, H, G] = e^{gl}; A_out (fp32 A) and g_cum_out when
// given.
// 8 warps: warp w, rows [16 (w % 4), +16), the column tiles nt (8 columns each) of parity w / 4
constexpr int SCORE_THREADS = 256;

template <class T, int K> struct ScoreShared {
  static constexpr int LK = K + PAD, LA = C + 4;
  T q[C][LK], k[C][LK];
  T qs[C][LK]; // q~ e^{g_cum - g_cum_r}: the left factor against sub-chunk r's first row
  float a[C][LA];
  ChunkGates<K> gates;
};

/// The largest spread g_cum_r - g_cum_i of a factored row of the diagonal block: the right
/// factors k e^{spread} stay within the input type's range.
template <class T> constexpr float spread_limit = 40.0f;
template <> constexpr float spread_limit<__half> = 8.0f;

/// The pair (i, j), j <= i < 16, numbered p = i (i + 1) / 2 + j.
__device__ inline void pair_of(int p, int &i, int &j) {
  i = static_cast<int>((sqrtf(8.0f * p + 1.0f) - 1.0f) * 0.5f);
  while (i * (i + 1) / 2 > p)
    --i;
  while ((i + 1) * (i + 2) / 2 <= p)
    ++i;
  j = p - i * (i + 1) / 2;
}

/// The diagonal block's rows in `rows` (bit i: row row0 + i), each term with its own exp, in
/// fp32: each lane sums its pairs j <= i over the keys.
template <class In, int K>
__device__ void pairwise_diagonal(ScoreShared<In, K> &s, int row0, unsigned rows, float scale) {
  constexpr int PAIRS = SUB * (SUB + 1) / 2, PER_LANE = (PAIRS + 31) / 32;
  const float(*g_cum)[ChunkGates<K>::LG] = s.gates.g;
  const int lane = threadIdx.x % 32;
  int pi[PER_LANE], pj[PER_LANE];
  float x[PER_LANE];
#pragma unroll
  for (int m = 0; m < PER_LANE; ++m) {
    pair_of(min(lane + 32 * m, PAIRS - 1), pi[m], pj[m]);
    pi[m] += row0;
    pj[m] += row0;
    x[m] = 0;
  }
  for (int col = 0; col < K; ++col)
#pragma unroll
    for (int m = 0; m < PER_LANE; ++m)
      x[m] += val(s.q[pi[m]][col]) * scale * val(s.k[pj[m]][col]) *
              expf(g_cum[pi[m]][col] - g_cum[pj[m]][col]);
#pragma unroll
  for (int m = 0; m < PER_LANE; ++m)
    if (lane + 32 * m < PAIRS && (rows >> (pi[m] - row0) & 1u))
      s.a[pi[m]][pj[m]] = x[m];
}

template <class In, int K, bool SCALAR>
__global__ void __launch_bounds__(SCORE_THREADS)
    chunk_gla_scores_tc_kernel(const In *q, const In *k, const float *g, In *A16, In *qd, In *kd,
                               float *decay, float *A_out, float *g_cum_out, DeviceChunkTable t,
                               ChunkDims d) {
  using S = ScoreShared<In, K>;
  constexpr int G = SCALAR ? 1 : K;
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  S &s = *reinterpret_cast<S *>(shared_bytes);
  const int c = blockIdx.x, hd = blockIdx.y, tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const ChunkRows rows = chunk_rows(t, c);
  const int n = rows.n, last = n - 1;
  float(*g_cum)[ChunkGates<K>::LG] = s.gates.g;
  stage_rows(&s.q[0][0], S::LK, q, rows.bos, n, hd, d.H, K, 0, K);
  stage_rows(&s.k[0][0], S::LK, k, rows.bos, n, hd, d.H, K, 0, K);
  chunk_gates<K, SCALAR>(s.gates, g, rows, hd, d, g_cum_out);

  // -- qd = q~ . e^{g_cum}, kd = k . e^{gl - g_cum} (8 values a store) and e^{gl}, for the
  //    sequential kernel; gla: qs, the scores' left factor
  for (int e = tid; e < n * (K / 8); e += SCORE_THREADS) {
    const int i = e / (K / 8), col0 = (e % (K / 8)) * 8;
    alignas(16) In xq[8];
    alignas(16) In xk[8];
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      const int col = col0 + u;
      const float qi = val(s.q[i][col]) * d.scale, ki = val(s.k[i][col]);
      const float gi = SCALAR ? g_cum[i][0] : g_cum[i][col];
      xq[u] = to<In>(qi * (SCALAR ? s.gates.row_up[i] : expf(gi)));
      xk[u] = to<In>(ki * (SCALAR ? s.gates.row_to_end[i] : expf(g_cum[last][col] - gi)));
    }
    *reinterpret_cast<uint4 *>(qd + at_k(rows.bos + i, hd, col0, d)) =
        *reinterpret_cast<const uint4 *>(xq);
    *reinterpret_cast<uint4 *>(kd + at_k(rows.bos + i, hd, col0, d)) =
        *reinterpret_cast<const uint4 *>(xk);
  }
  if (tid < G)
    decay[(static_cast<long>(c) * d.H + hd) * G + tid] = expf(g_cum[last][SCALAR ? 0 : tid]);
  if (!SCALAR) {
    for (int e = tid; e < C * K; e += SCORE_THREADS) {
      const int i = e / K, col = e % K;
      s.qs[i][col] =
          to<In>(val(s.q[i][col]) * d.scale * expf(g_cum[i][col] - g_cum[i / SUB * SUB][col]));
    }
    __syncthreads();
  }

  // -- the scores of the warp's rows [row0, row0 + 16), its tiles of columns [0, row0 + 16)
  const int row0 = SUB * (warp % 4), parity = warp / 4;
  const auto mine = [&](int nt) { return nt % 2 == parity && nt < row0 / 8 + 2; };
  mma::Acc acc[C / 8];
  if (SCALAR) { // A = (q~ k^T) . exp(g_cum_i - g_cum_j): one exp per (row, column)
    for (int kk = 0; kk < K; kk += 16) {
      mma::FragA a;
      mma::load_a(a, &s.q[0][0], S::LK, row0, kk);
#pragma unroll
      for (int nt = 0; nt < C / 8; ++nt)
        if (mine(nt)) {
          mma::FragB b;
          mma::load_b(b, &s.k[0][0], S::LK, nt * 8, kk);
          mma::mma(acc[nt], a, b, In{});
        }
    }
#pragma unroll
    for (int nt = 0; nt < C / 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int i = row0 + mma::acc_row(e), j = nt * 8 + mma::acc_col(e);
        if (nt % 2 != parity)
          continue;
#ifdef RULEPROOF_PLANTED_BUG // gpu_check_planted only: a deliberate bug, the diagonal dropped
        const bool kept = j < i;
#else
        const bool kept = j <= i;
#endif
        s.a[i][j] = kept ? acc[nt].x[e] * d.scale * expf(g_cum[i][0] - g_cum[j][0]) : 0.0f;
      }
  } else {
    // which rows of the diagonal block are factored: a prefix, those whose spread is small
    unsigned pairwise_rows = 0;
    for (int i = 0; i < SUB; ++i) {
      bool wide = false;
      for (int col = lane; col < K; col += 32)
        wide = wide || g_cum[row0][col] - g_cum[row0 + i][col] > spread_limit<In>;
      if (__any_sync(0xffffffffu, wide))
        pairwise_rows |= 1u << i;
    }
    const int r = row0;      // the reference row
#ifdef RULEPROOF_PLANTED_BUG // gpu_check_planted only: a deliberate bug, the reference row one
                             // early
    const int r_right = r > 0 ? r - 1 : 0;
#else
    const int r_right = r;
#endif
    // the factored terms, the right factor built in registers (zero on the block's
    // pairwise rows, whose factors could overflow: those entries are computed again below)
    for (int kk = 0; kk < K; kk += 16) {
      mma::FragA a;
      mma::load_a(a, &s.qs[0][0], S::LK, row0, kk);
#pragma unroll
      for (int nt = 0; nt < C / 8; ++nt)
        if (mine(nt)) {
          mma::FragB b;
          const int j = nt * 8 + lane / 4;
          const bool zero = j >= row0 && (pairwise_rows >> (j - row0) & 1u);
#pragma unroll
          for (int half = 0; half < 2; ++half) {
            const int col = kk + 2 * (lane % 4) + 8 * half;
            const float x0 = val(s.k[j][col]) * expf(g_cum[r_right][col] - g_cum[j][col]);
            const float x1 =
                val(s.k[j][col + 1]) * expf(g_cum[r_right][col + 1] - g_cum[j][col + 1]);
            b.x[half] = zero ? 0u : mma::pack(to<In>(x0), to<In>(x1));
          }
          mma::mma(acc[nt], a, b, In{});
        }
    }
#pragma unroll
    for (int nt = 0; nt < C / 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int i = row0 + mma::acc_row(e), j = nt * 8 + mma::acc_col(e);
        if (nt % 2 == parity)
          s.a[i][j] = j <= i ? acc[nt].x[e] : 0.0f;
      }
    __syncthreads(); // the block's factored entries are in; its pairwise rows replace them
    if (pairwise_rows && parity == 0)
      pairwise_diagonal(s, row0, pairwise_rows, d.scale);
  }
  __syncthreads();
  for (int e = tid; e < n * C; e += SCORE_THREADS) {
    const int i = e / C, j = e % C;
    A16[at_score(rows.bos + i, hd, j, d)] = to<In>(s.a[i][j]);
    if (A_out)
      A_out[at_score(rows.bos + i, hd, j, d)] = s.a[i][j];
  }
}

// ---------------------------------------------------------------------------------------
// chunk_gla_fwd_tc: grid (N, H, V / TC_BV), FWD_THREADS threads, sizeof(FwdShared<In, K, G>)
// bytes of dynamic shared memory.
//   output: warp w computes rows [16 (w % 4), +16), columns [B/2 (w / 4), +B/2) of the tile
//           (B = TC_BV columns);
//   state:  warp w holds keys [16 (w % (K / 16)), +16), columns [B/S (w / (K / 16)), +B/S)
//           of the tile, S = 8 / (K / 16) warps sharing a key tile.
constexpr int FWD_THREADS = 256, FWD_WARPS = FWD_THREADS / 32;
constexpr int O_TILES = TC_BV / 2 / 8; // n tiles of a warp's output: half the tile's columns

/// One chunk's operands, copied in while the chunk before is worked on.
template <class T, int K, int G> struct alignas(16) ChunkTiles {
  static constexpr int LK = K + PAD, LV = TC_BV + PAD, LC = C + PAD;
  T qd[C][LK]; // q~ e^{g_cum}: the left factor of the output's state term
  T kd[C][LK]; // k e^{gl - g_cum}: the left factor (transposed) of the state update
  T v[C][LV];
  T a[C][LC];     // the scores
  float decay[G]; // e^{gl}
};
template <class T, int K, int G> struct FwdShared {
  ChunkTiles<T, K, G> tiles[2];
  T h[K][TC_BV + PAD]; // the state at the chunk's start, rounded to T
};

/// Starts copying chunk c's tiles into `x` (rows past its end zero).
template <class T, int K, int G>
__device__ void copy_chunk(ChunkTiles<T, K, G> &x, const T *qd, const T *kd, const T *v,
                           const T *A16, const float *decay, ChunkRows rows, int c, int hd, int v0,
                           const ChunkDims &d) {
  constexpr int PER = 16 / sizeof(T);
  const long at0 = static_cast<long>(rows.bos) * d.H + hd; // row bos of head hd
  for (int e = threadIdx.x; e < C * (K / PER); e += blockDim.x) {
    const int r = e / (K / PER), col = (e % (K / PER)) * PER;
    const long at = (at0 + static_cast<long>(min(r, rows.n - 1)) * d.H) * K + col;
    mma::copy_async<16>(&x.qd[r][col], qd + at, r >= rows.n);
    mma::copy_async<16>(&x.kd[r][col], kd + at, r >= rows.n);
  }
  for (int e = threadIdx.x; e < C * (TC_BV / PER); e += blockDim.x) {
    const int r = e / (TC_BV / PER), col = (e % (TC_BV / PER)) * PER;
    const long row = at0 + static_cast<long>(min(r, rows.n - 1)) * d.H;
    mma::copy_async<16>(&x.v[r][col], v + row * d.V + v0 + col, r >= rows.n);
  }
  for (int e = threadIdx.x; e < C * (C / PER); e += blockDim.x) {
    const int r = e / (C / PER), col = (e % (C / PER)) * PER;
    const long row = at0 + static_cast<long>(min(r, rows.n - 1)) * d.H;
    mma::copy_async<16>(&x.a[r][col], A16 + row * C + col, r >= rows.n);
  }
  if constexpr (G == 1) {
    if (threadIdx.x == 0)
      mma::copy_async<4>(&x.decay[0], decay + static_cast<long>(c) * d.H + hd, false);
  } else if (threadIdx.x < G / 4) {
    mma::copy_async<16>(&x.decay[4 * threadIdx.x],
                        decay + (static_cast<long>(c) * d.H + hd) * G + 4 * threadIdx.x, false);
  }
  mma::commit_copies();
}

/// acc += rows [row0, row0 + 16) of `left` times rows [0, depth) of `right` (stored by rows),
/// columns [col0, col0 + 8 TILES).
template <class T, int TILES>
__device__ inline void rows_times(mma::Acc (&acc)[TILES], const T *left, int ld_left, int row0,
                                  const T *right, int ld_right, int col0, int depth) {
  for (int kk = 0; kk < depth; kk += 16) {
    mma::FragA a;
    mma::load_a(a, left, ld_left, row0, kk);
#pragma unroll
    for (int nt = 0; nt < TILES; ++nt) {
      mma::FragB b;
      mma::load_b_rows(b, right, ld_right, kk, col0 + nt * 8);
      mma::mma(acc[nt], a, b, T{});
    }
  }
}

template <class In, int K, bool SCALAR>
__global__ void __launch_bounds__(FWD_THREADS)
    chunk_gla_fwd_tc_kernel(const In *qd, const In *kd, const In *v, const In *A16,
                            const float *decay, const float *h0, In *o, float *ht, float *h_out,
                            DeviceChunkTable t, ChunkDims d) {
  constexpr int G = SCALAR ? 1 : K;
  using S = FwdShared<In, K, G>;
  using X = ChunkTiles<In, K, G>;
  constexpr int KEY_TILES = K / 16, SHARING = FWD_WARPS / KEY_TILES;
  constexpr int STATE_TILES = TC_BV / 8 / SHARING; // n tiles of a warp's state
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  S &s = *reinterpret_cast<S *>(shared_bytes);
  const int n_seq = blockIdx.x, hd = blockIdx.y, v0 = blockIdx.z * TC_BV;
  const int warp = threadIdx.x / 32;
  const int key0 = 16 * (warp % KEY_TILES), scol0 = TC_BV / SHARING * (warp / KEY_TILES);
  const int row0 = SUB * (warp % 4), ocol0 = TC_BV / 2 * (warp / 4);
  const int first = t.seq_first_chunk[n_seq], end = t.seq_first_chunk[n_seq + 1];

  // the state tile, in accumulators: tile nt covers keys key0.., columns scol0 + 8 nt..; its
  // copy in s.h (the input type), the state at the start of each chunk
  mma::Acc state[STATE_TILES];
  const auto share_state = [&](int c) {
#pragma unroll
    for (int nt = 0; nt < STATE_TILES; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int key = key0 + mma::acc_row(e), col = scol0 + nt * 8 + mma::acc_col(e);
        s.h[key][col] = to<In>(state[nt].x[e]);
        if (h_out && c < end)
          h_out[at_state(c, hd, key, v0 + col, d)] = state[nt].x[e];
      }
  };
#pragma unroll
  for (int nt = 0; nt < STATE_TILES; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int key = key0 + mma::acc_row(e), col = v0 + scol0 + nt * 8 + mma::acc_col(e);
      state[nt].x[e] = h0 ? h0[at_state(n_seq, hd, key, col, d)] : 0.0f;
    }
  share_state(first);
  if (first < end)
    copy_chunk(s.tiles[0], qd, kd, v, A16, decay, chunk_rows(t, first), first, hd, v0, d);

  for (int c = first; c < end; ++c) {
    const ChunkRows rows = chunk_rows(t, c);
    X &x = s.tiles[(c - first) % 2];
    mma::wait_copies();
    __syncthreads(); // chunk c's tiles and s.h are in; every warp is done with chunk c - 1
    if (c + 1 < end)
      copy_chunk(s.tiles[(c + 1 - first) % 2], qd, kd, v, A16, decay, chunk_rows(t, c + 1), c + 1,
                 hd, v0, d);

    // -- o = (q~ . e^{g_cum}) h + A V on the warp's rows and columns
    mma::Acc acc[O_TILES];
    rows_times(acc, &x.qd[0][0], X::LK, row0, &s.h[0][0], X::LV, ocol0, K);
    rows_times(acc, &x.a[0][0], X::LC, row0, &x.v[0][0], X::LV, ocol0, row0 + SUB);
#pragma unroll
    for (int nt = 0; nt < O_TILES; ++nt)
#pragma unroll
      for (int e = 0; e < 4; e += 2) {
        const int i = row0 + mma::acc_row(e), col = v0 + ocol0 + nt * 8 + mma::acc_col(e);
        if (i < rows.n) {
          In *p = o + at_v(rows.bos + i, hd, col, d);
          p[0] = to<In>(acc[nt].x[e]);
          p[1] = to<In>(acc[nt].x[e + 1]);
        }
      }
    __syncthreads(); // s.h is no longer read

    // -- h' = Diag(e^{gl}) h + (K . e^{gl - g_cum})^T V on the warp's keys and columns
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float decay_e = x.decay[SCALAR ? 0 : key0 + mma::acc_row(e)];
#pragma unroll
      for (int nt = 0; nt < STATE_TILES; ++nt)
        state[nt].x[e] *= decay_e;
    }
    for (int kk = 0; kk < C; kk += 16) {
      mma::FragA a;
      mma::load_a_transposed(a, &x.kd[0][0], X::LK, key0, kk);
#pragma unroll
      for (int nt = 0; nt < STATE_TILES; ++nt) {
        mma::FragB b;
        mma::load_b_rows(b, &x.v[0][0], X::LV, kk, scol0 + nt * 8);
        mma::mma(state[nt], a, b, In{});
      }
    }
    share_state(c + 1);
  }
  if (ht)
#pragma unroll
    for (int nt = 0; nt < STATE_TILES; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int key = key0 + mma::acc_row(e), col = v0 + scol0 + nt * 8 + mma::acc_col(e);
        ht[at_state(n_seq, hd, key, col, d)] = state[nt].x[e];
      }
}

template <class In, int K, bool SCALAR>
void launch_tc(const void *q, const void *k, const void *v, const float *g, const float *h0,
               void *o, const TcScratch &scratch, float *ht, float *g_cum, float *h, float *A,
               const DeviceChunkTable &t, const ChunkDims &d) {
  const int score_bytes = static_cast<int>(sizeof(ScoreShared<In, K>));
  auto *scores = chunk_gla_scores_tc_kernel<In, K, SCALAR>;
  allow_shared_memory(scores, score_bytes, "chunk_gla_scores_tc_kernel");
  if (t.NC > 0)
    scores<<<dim3(t.NC, d.H), SCORE_THREADS, score_bytes>>>(
        in<In>(q), in<In>(k), g, out<In>(scratch.A16), out<In>(scratch.qd), out<In>(scratch.kd),
        scratch.decay, A, g_cum, t, d);
  check("chunk_gla_scores_tc_kernel");
  const int bytes = static_cast<int>(sizeof(FwdShared < In, K, SCALAR ? 1 : K >));
  auto *forward = chunk_gla_fwd_tc_kernel<In, K, SCALAR>;
  allow_shared_memory(forward, bytes, "chunk_gla_fwd_tc_kernel");
  forward<<<dim3(t.N, d.H, d.V / TC_BV), FWD_THREADS, bytes>>>(
      in<In>(scratch.qd), in<In>(scratch.kd), in<In>(v), in<In>(scratch.A16), scratch.decay, h0,
      out<In>(o), ht, h, t, d);
}

} // namespace

void launch_chunk_gla_fwd_tc(const void *q, const void *k, const void *v, const float *g,
                             const float *h0, void *o, const TcScratch &scratch, float *ht,
                             float *g_cum, float *h, float *A, const DeviceChunkTable &t,
                             const ChunkDims &d) {
  if (t.N == 0)
    return;
  with_input_type(d, [&](auto x) {
    using In = decltype(x);
    if (d.G == 1)
      d.K == 64 ? launch_tc<In, 64, true>(q, k, v, g, h0, o, scratch, ht, g_cum, h, A, t, d)
                : launch_tc<In, 128, true>(q, k, v, g, h0, o, scratch, ht, g_cum, h, A, t, d);
    else
      d.K == 64 ? launch_tc<In, 64, false>(q, k, v, g, h0, o, scratch, ht, g_cum, h, A, t, d)
                : launch_tc<In, 128, false>(q, k, v, g, h0, o, scratch, ht, g_cum, h, A, t, d);
  });
  check_sync("chunk_gla_fwd_tc_kernel");
}

} // namespace ruleproof::gpu::detail
