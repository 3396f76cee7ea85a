// ruleproof: dplr's forward and backward on tensor cores (flash-linear-attention's
// parameterisation, per-key gate gk), Hopper (sm_90). The path KernelPath::tensor_cores of
// chunk_dplr_fwd and chunk_dplr_bwd (gpu/chunk_dplr.hpp); the CUDA-core path is gpu/chunk_dplr.cu.
// Every matrix product runs as mma.sync m16n8k16 with operands in the input type (bf16 or fp16) and
// fp32 sums (gpu/detail/mma.cuh); gates, the triangular solve and the running state stay fp32.
// Judged under the tensor-core policy (gpu/twin.hpp).
//
// CPU reference, one grep away: reference/dplr/chunk.hpp (chunk_dplr_fwd_wy:
// chunk_dplr_fwd_intra, solve_tril, recompute_w_c; chunk_dplr_fwd_h; chunk_dplr_fwd_o;
// chunk_dplr_bwd_dhu, chunk_dplr_bwd_wy, chunk_dplr_bwd_dqk), seed 001's WY form and its "Gated
// DPLR Backward"; gpu/chunk_dplr.cu's header gives the formulas, forward and backward, in the
// engine's form S_t = (A_t - a_t d_t^T) S_{t-1} + k_t v_t^T with a = flash-linear-attention's b
// and d = -(its a).
//
// The forward, three kernels. Per chunk of n <= 64 rows, g = g_cum its local cumulative gate, gx
// its row above (0 on the chunk's first row), q~ = scale q, gl = g of row n - 1:
//   A_qk = (q~ k^T) . D,  A_qa = (q~ a^T) . D  (j <= i),  D_ijc = e^{g_ic - g_jc}
//   A_ba = (d a^T) . Dx,  A_bk = (d k^T) . Dx  (j < i),   Dx_ijc = e^{gx_ic - g_jc}
//   E = (I + A_ba)^-1,  w = E (d . e^gx),  c = -E (A_bk v)
//   v2 = c - w h,  h' = Diag(e^gl) h + (a . e^{gl - g})^T v2 + (k . e^{gl - g})^T v
//   o = (q~ . e^g) h + A_qk v + A_qa v2
// chunk_dplr_wy_tc_kernel: grid (NC, H), 8 warps, every chunk at once: g_cum; the four scores;
// E by 16-row blocks in fp32 (unit_lower_inverse, as the delta rules' WY kernel); w and c on
// tensor cores, as (-E) (-d . e^gx) and (-E) (A_bk v); the factors qd = q~ . e^g, kd = k . e^{gl -
// g}, ad = a . e^{gl - g}. A_qk, A_qa, w, c, qd, kd, ad stored in the input type (the operands of
// the products that read them), e^{gl} in fp32. The exclusive scores are the inclusive scores of
// d's rows moved up by one (row i of (d_up a^T) . D is row i + 1 of A_ba, as the reference's
// scores_exclusive computes them), so that all four take the per-key split of gla's scores: at
// 16-row sub-chunks against each sub-chunk's first row r, left factors q~_ic e^{g_ic - g_rc} and
// d_{i+1,c} e^{g_ic - g_rc} (at most |q~|, |d|), right factors k_jc e^{g_rc - g_jc} and a_jc
// e^{g_rc - g_jc} (at most |k|, |a| below the diagonal block, e^{spread} times that inside it),
// built in registers (factored_scores); the diagonal block's rows whose spread passes
// spread_limit are summed term by term in fp32 (pairwise_scores); gpu/chunk_gla_tc.cu's header
// argues the bound and the extreme gates.
// Then chunk_gla_state_tc (gpu/chunk_gla_tc.cu) with w, right c, left ad and the second term kd^T
// v: the state in mma accumulators, v2 and h at each chunk's start stored in the input type.
// chunk_dplr_fwd_o_tc_kernel: grid (NC, H), 8 warps, every chunk at once: the output from qd, h,
// A_qk, v, A_qa and v2, three plain products.
// The backward (gpu/chunk_dplr.cpp): the WY kernel again (also storing -E, A_bk, bl = -d . e^gx
// and bv = A_bk v), the sequential kernel forwards (h, v2) and backwards (left qd, right dO, w,
// dv2 = A_qa^T dO + ad dh: dh after each chunk, dv2), then chunk_dplr_bwd_wy_tc (what sums over
// the values or goes through E: dv, the four score gradients) and chunk_dplr_bwd_dqk_tc (the
// per-key products: dq, dk, da, db, dgk); their formulas are above each kernel.
// No launcher waits for its kernels (check, not check_sync).
#include "detail/chunk_device.cuh" // at_state, at_score, chunk_rows, check, allow_shared_memory,
                                   // with_input_type, with_sizes, in, out, C
#include "detail/dplr_launch.hpp"
#include "detail/gla_tc.cuh" // to, val, fast_exp, copy_rows_async, ChunkGates, copy_gates_async, sum_chunk_gates,
                             // store_decayed_factors, factored_scores, pairwise_scores,
                             // wide_rows, each_entry_of_side, rows_times, store_rows,
                             // unit_lower_inverse, a_times, store_scores, PAD, SUB
#include "detail/mma.cuh"

namespace ruleproof::gpu::detail {

namespace {

using namespace tc;

constexpr int WY_THREADS = 256, O_THREADS = 256;

template <class T, int K, int V> struct DplrWyShared {
  static constexpr int LK = K + PAD, LV = V + PAD, LC = C + PAD, LF = C + 1;
  T q[C][LK]; // q, then -d . e^gx (flash-linear-attention's a . e^gx): w's right factor with -E
  T k[C][LK];
  T a[C][LK];      // the engine's a (flash-linear-attention's b)
  T d[C + 1][LK];  // -d (flash-linear-attention's a) of the chunk's rows, zeros below; from row 1
                   // on, d's rows moved up by one
  T v[C][LV];      // v, then A_bk v: c's right factor with -E
  T qk[C][LC];     // A_qk, then -E, in the input type
  T qa[C][LC];     // A_qa
  T bk[C][LC];     // A_bk
  float ba[C][LF]; // A_ba
  // the gates until w's right factor is made, then E in fp32 and the solve's partial sums
  union {
    ChunkGates<K> gates;
    LowerInverse solve;
  };
};

template <class In, int K, int V>
__global__ void __launch_bounds__(WY_THREADS)
    chunk_dplr_wy_tc_kernel(const In *q, const In *k, const In *v, const In *a_fla, const In *b_fla,
                            const float *g, DplrTcScratch x, DplrTcStages st, DeviceChunkTable t,
                            ChunkDims d) {
  using S = DplrWyShared<In, K, V>;
  constexpr int LG = ChunkGates<K>::LG;
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  S &s = *reinterpret_cast<S *>(shared_bytes);
  const int c = blockIdx.x, hd = blockIdx.y, tid = threadIdx.x, warp = tid / 32;
  const ChunkRows rows = chunk_rows(t, c);
  const int n = rows.n;
  const long row_at = static_cast<long>(rows.bos) * d.H + hd; // row bos of head hd
  const long key_stride = static_cast<long>(d.H) * K;
  copy_gates_async<K, false>(s.gates, g, rows, hd, d); // first, and summed while the rest arrive
  mma::commit_copies();
  copy_rows_async(&s.q[0][0], S::LK, q + row_at * K, key_stride, C, n, K);
  copy_rows_async(&s.k[0][0], S::LK, k + row_at * K, key_stride, C, n, K);
  copy_rows_async(&s.a[0][0], S::LK, b_fla + row_at * K, key_stride, C, n, K);
  copy_rows_async(&s.d[0][0], S::LK, a_fla + row_at * K, key_stride, C + 1, n, K);
  copy_rows_async(&s.v[0][0], S::LV, v + row_at * V, static_cast<long>(d.H) * V, C, n, V);
  mma::commit_copies();
  mma::wait_copies_but_last(); // the gates
  sum_chunk_gates<K, false>(s.gates, rows, hd, d, st.g_cum);
  mma::wait_copies();
  __syncthreads();
  const float(*g_cum)[LG] = s.gates.g;

  store_decayed_factors<In, K, false>(&s.q[0][0], &s.k[0][0], S::LK, s.gates, rows, c, hd, d,
                                      static_cast<In *>(x.qd), static_cast<In *>(x.kd), x.decay);
  store_decayed_factors<In, K, false>(&s.a[0][0], &s.a[0][0], S::LK, s.gates, rows, c, hd, d,
                                      nullptr, static_cast<In *>(x.ad), nullptr);

  // -- the four scores: warp w, rows [16 (w % 4), +16), the column tiles of parity w / 4 up to
  //    the diagonal; q~ and d's rows moved up against k, then against a
  const int row0 = SUB * (warp % 4), side = warp / 4;
  const unsigned pairwise_rows = wide_rows<In, K>( // the factors scaled up: k and a
      g_cum, row0, row0, 1.0f,
      fmaxf(factor_magnitude<In, K>(&s.k[0][0], S::LK, row0),
            factor_magnitude<In, K>(&s.a[0][0], S::LK, row0)));
  const In *const left[2] = {&s.q[0][0], &s.d[1][0]};
  const float left_scale[2] = {d.scale, -1.0f}; // q~, d
  // A_qk and A_qa: entry (i, j) for j <= i, in the input type (and in fp32 to the stage)
  const auto inclusive = [&](In(*dst)[S::LC], float *stage, int i, int j, float y) {
    const float z = j <= i ? y : 0.0f;
    dst[i][j] = to<In>(z);
    if (stage && i < n)
      stage[at_score(rows.bos + i, hd, j, d)] = z;
  };
  // A_bk and A_ba: entry (i, j <= i) of d's rows moved up is entry (i + 1, j) of the exclusive
  // scores; row 0 of theirs is zero
  const auto exclusive = [&](In(*dst16)[S::LC], float(*dst32)[S::LF], float *stage, int i, int j,
                             float y) {
    if (i + 1 >= C)
      return;
    const float z = j <= i ? y : 0.0f;
    if (dst16)
      dst16[i + 1][j] = to<In>(z);
    if (dst32)
      dst32[i + 1][j] = z;
    if (stage && i + 1 < n)
      stage[at_score(rows.bos + i + 1, hd, j, d)] = z;
  };
  if (tid < C) {
    s.bk[0][tid] = to<In>(0.0f);
    s.ba[0][tid] = 0.0f;
    if (st.A_bk)
      st.A_bk[at_score(rows.bos, hd, tid, d)] = 0.0f;
    if (st.A_ba)
      st.A_ba[at_score(rows.bos, hd, tid, d)] = 0.0f;
  }
  {
    mma::Acc acc[2][C / 8]; // against k: A_qk, A_bk
    factored_scores(acc, left, left_scale, &s.k[0][0], S::LK, g_cum, row0, side, pairwise_rows,
                    row0, K);
    each_entry_of_side(acc[0], row0, side,
                       [&](int i, int j, float y) { inclusive(s.qk, st.A_qk, i, j, y); });
    each_entry_of_side(acc[1], row0, side,
                       [&](int i, int j, float y) { exclusive(s.bk, nullptr, st.A_bk, i, j, y); });
  }
  {
    mma::Acc acc[2][C / 8]; // against a: A_qa, A_ba
    factored_scores(acc, left, left_scale, &s.a[0][0], S::LK, g_cum, row0, side, pairwise_rows,
                    row0, K);
    each_entry_of_side(acc[0], row0, side,
                       [&](int i, int j, float y) { inclusive(s.qa, st.A_qa, i, j, y); });
    each_entry_of_side(acc[1], row0, side,
                       [&](int i, int j, float y) { exclusive(nullptr, s.ba, st.A_ba, i, j, y); });
  }
  __syncthreads(); // the factored entries are in; the block's pairwise rows replace them
  if (pairwise_rows && side == 0) {
    pairwise_scores<In, K>(&s.q[0][0], &s.k[0][0], S::LK, g_cum, row0, pairwise_rows, d.scale,
                           [&](int i, int j, float y) { inclusive(s.qk, st.A_qk, i, j, y); });
    pairwise_scores<In, K>(&s.q[0][0], &s.a[0][0], S::LK, g_cum, row0, pairwise_rows, d.scale,
                           [&](int i, int j, float y) { inclusive(s.qa, st.A_qa, i, j, y); });
    pairwise_scores<In, K>(
        &s.d[1][0], &s.k[0][0], S::LK, g_cum, row0, pairwise_rows, -1.0f,
        [&](int i, int j, float y) { exclusive(s.bk, nullptr, st.A_bk, i, j, y); });
    pairwise_scores<In, K>(
        &s.d[1][0], &s.a[0][0], S::LK, g_cum, row0, pairwise_rows, -1.0f,
        [&](int i, int j, float y) { exclusive(nullptr, s.ba, st.A_ba, i, j, y); });
  }
  __syncthreads();
  store_scores(static_cast<In *>(x.A_qk), s.qk, rows, hd, d);
  store_scores(static_cast<In *>(x.A_qa), s.qa, rows, hd, d);
  if (x.A_bk)
    store_scores(static_cast<In *>(x.A_bk), s.bk, rows, hd, d);
  // w's right factor with -E, -d . e^gx, in the place of q (read by now)
  map_rows<In, K>(&s.q[0][0], S::LK, &s.d[0][0], S::LK, C, [&](int i, int col, float y) {
    return y * (i > 0 ? fast_exp(g_cum[i - 1][col]) : 1.0f);
  });

  // -- E = (I + A_ba)^-1 in fp32, then -E in the input type in the place of A_qk (stored by now)
  __syncthreads(); // the gates' place is free for the solve
  unit_lower_inverse(s.ba, s.solve, [&](int i, int j, float y) {
    const In e16 = to<In>(y);
    s.qk[i][j] = to<In>(-val(e16)); // exact: the rounding is symmetric
    if (st.E && i < n)
      st.E[at_score(rows.bos + i, hd, j, d)] = val(e16);
  });
  if (x.bl)
    store_tile<In, K>(static_cast<In *>(x.bl), &s.q[0][0], S::LK, n, row_at * K, key_stride);
  // A_bk v on the warp's rows and half the columns, in the input type in the place of v
  mma::Acc bv[V / 16];
  rows_times(bv, &s.bk[0][0], S::LC, row0, &s.v[0][0], S::LV, V / 2 * side, row0 + SUB);
  __syncthreads(); // every warp is done with v
#pragma unroll
  for (int nt = 0; nt < V / 16; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      s.v[row0 + mma::acc_row(e)][V / 2 * side + nt * 8 + mma::acc_col(e)] = to<In>(bv[nt].x[e]);
  __syncthreads();
  if (x.mE)
    store_scores(static_cast<In *>(x.mE), s.qk, rows, hd, d);
  if (x.bv)
    store_tile<In, V>(static_cast<In *>(x.bv), &s.v[0][0], S::LV, n, row_at * V,
                      static_cast<long>(d.H) * V);

  // -- w = (-E) (-d . e^gx), c = (-E) (A_bk v) on the warp's rows and half the columns
  a_times<In, K>(&s.qk[0][0], S::LC, &s.q[0][0], S::LK, row0, side, rows, row_at, d.H,
                 static_cast<In *>(x.w), st.w);
  a_times<In, V>(&s.qk[0][0], S::LC, &s.v[0][0], S::LV, row0, side, rows, row_at, d.H,
                 static_cast<In *>(x.c), st.c);
}

// ---------------------------------------------------------------------------------------
// chunk_dplr_fwd_o_tc: grid (NC, H), O_THREADS threads; warp w owns rows [16 (w % 4), +16) and
// half the value columns (w / 4) of the chunk's output o = qd h + A_qk v + A_qa v2. Every operand
// of the chunk is copied into shared memory at once (cp.async).
template <class T, int K, int V> struct DplrOShared {
  static constexpr int LK = K + PAD, LV = V + PAD, LC = C + PAD;
  T qd[C][LK];
  T h[K][LV];
  T v[C][LV];
  T v2[C][LV];
  T qk[C][LC];
  T qa[C][LC];
};

template <class In, int K, int V>
__global__ void __launch_bounds__(O_THREADS, 2)
    chunk_dplr_fwd_o_tc_kernel(const In *v, const In *qd, const In *A_qk, const In *A_qa,
                               const In *h, const In *v2, In *o, DeviceChunkTable t, ChunkDims d) {
  using S = DplrOShared<In, K, V>;
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  S &s = *reinterpret_cast<S *>(shared_bytes);
  const int c = blockIdx.x, hd = blockIdx.y, warp = threadIdx.x / 32;
  const ChunkRows rows = chunk_rows(t, c);
  const int n = rows.n;
  const long row_at = static_cast<long>(rows.bos) * d.H + hd; // row bos of head hd
  const long key_stride = static_cast<long>(d.H) * K, value_stride = static_cast<long>(d.H) * V;
  copy_rows_async(&s.qd[0][0], S::LK, qd + row_at * K, key_stride, C, n, K);
  copy_rows_async(&s.h[0][0], S::LV, h + at_state(c, hd, 0, 0, d), V, K, K, V);
  copy_rows_async(&s.v[0][0], S::LV, v + row_at * V, value_stride, C, n, V);
  copy_rows_async(&s.v2[0][0], S::LV, v2 + row_at * V, value_stride, C, n, V);
  copy_rows_async(&s.qk[0][0], S::LC, A_qk + row_at * C, static_cast<long>(d.H) * C, C, n, C);
  copy_rows_async(&s.qa[0][0], S::LC, A_qa + row_at * C, static_cast<long>(d.H) * C, C, n, C);
  mma::commit_copies();
  mma::wait_copies();
  __syncthreads();
#ifdef RULEPROOF_PLANTED_BUG // gpu_check_planted only: a deliberate bug, A_qa's diagonal left out
  if (threadIdx.x < C)
    s.qa[threadIdx.x][threadIdx.x] = to<In>(0.0f);
  __syncthreads();
#endif
  const int row0 = SUB * (warp % 4), col0 = V / 2 * (warp / 4);
  mma::Acc acc[V / 16];
  rows_times(acc, &s.qd[0][0], S::LK, row0, &s.h[0][0], S::LV, col0, K);
  rows_times(acc, &s.qk[0][0], S::LC, row0, &s.v[0][0], S::LV, col0, row0 + SUB);
  rows_times(acc, &s.qa[0][0], S::LC, row0, &s.v2[0][0], S::LV, col0, row0 + SUB);
  store_rows(o, acc, row0, col0, n, row_at * V, value_stride, [](int, int, float y) { return y; });
}

// ---------------------------------------------------------------------------------------
// The backward: chunk_dplr_bwd_wy_tc, then chunk_dplr_bwd_dqk_tc, grid (NC, H), BWD_THREADS
// threads each; warp w owns rows [16 (w % 4), +16) and half the columns (w / 4) of every C x K and
// C x V result, and the column tiles of parity w / 4 of the C x C ones.
constexpr int BWD_THREADS = 256;

// chunk_dplr_bwd_wy_tc: everything that sums over the values or inverts through E:
//   Y = -E^T dv2 = (-E)^T dv2 (the input type),  dv = kd dh + A_qk^T dO + A_bk^T Y
//   dO h^T, v dh^T, v2 dh^T, rowsum(h . dh) (fp32 out),  dw = -dv2 h^T (the input type)
//   dA_qk = dO v^T, dA_qa = dO v2^T (j <= i),  dA_bk = Y v^T (j < i)
//   dE = -(dv2 bv^T) - (dw bl^T) (j < i),  E^T dw = -((-E)^T dw) (fp32 out)
//   Te = E^T dE = -((-E)^T dE),  dA_ba = -(Te E^T) = Te (-E)^T (j < i)
// Every operand of the chunk is copied into shared memory at once (cp.async); once h and dh are
// read, their place holds bv, bl, the staged dA_qk, dA_qa, dE and Te.
template <class T, int K, int V> struct DplrBwdWyShared {
  static constexpr int LK = K + PAD, LV = V + PAD, LC = C + PAD;
  T v[C][LV], v2[C][LV], d_o[C][LV], dv2[C][LV];
  T y[C][LV]; // -E^T dv2
  union {
    struct {
      T h[K][LV], dh[K][LV];
    } states;
    struct {
      T bv[C][LV];
      T bl[C][LK];
      T dqk[C][LC], dqa[C][LC], de[C][LC], te[C][LC];
    } wy;
  };
  T me[C][LC]; // -E
  T bk[C][LC]; // A_bk, then dA_ba with its rows moved up
  T qk[C][LC]; // A_qk, then dA_bk with its rows moved up
  T kd[C][LK], dw[C][LK];
};

/// Stores the fp32 accumulators of rows [row0, row0 + 16), columns [col0, col0 + 8 TILES) of a
/// [B*T, H, W] tensor at dst (rows < n), each value mapped by f, two values a store.
template <int W, int TILES, class F>
__device__ inline void store_rows_f32(float *dst, const mma::Acc (&acc)[TILES], int row0, int col0,
                                      int n, long row_at, long stride, F f) {
#pragma unroll
  for (int nt = 0; nt < TILES; ++nt)
#pragma unroll
    for (int e = 0; e < 4; e += 2) {
      const int i = row0 + mma::acc_row(e), col = col0 + nt * 8 + mma::acc_col(e);
      if (i < n)
        *reinterpret_cast<float2 *>(dst + row_at * W + i * stride + col) =
            make_float2(f(acc[nt].x[e]), f(acc[nt].x[e + 1]));
    }
}

/// The entries (i, j) of a C x C product's lower triangle on this warp's tiles (each_entry_of_side)
/// into a score gradient for chunkwise use: with `up`, row i goes to row i - 1 (the exclusive
/// scores, inclusive so); the diagonal (j == i, or j == i - 1 with up) to diag[row] in fp32 (rows
/// < n), the entries below it to dst in the input type, zeros elsewhere.
template <class In, int LC>
__device__ inline void stage_score_gradient(const mma::Acc (&acc)[C / 8], int row0, int side,
                                            bool up, In (*dst)[LC], float *diag, ChunkRows rows,
                                            long row_at, int H, float sign) {
  each_entry_of_side(acc, row0, side, [&](int i, int j, float x) {
    const int r = up ? i - 1 : i;
    if (r < 0)
      return;
    if (j == r && r < rows.n)
      diag[row_at + static_cast<long>(r) * H] = sign * x;
    dst[r][j] = to<In>(j < r ? sign * x : 0.0f);
  });
}

template <class In, int K, int V>
__global__ void __launch_bounds__(BWD_THREADS)
    chunk_dplr_bwd_wy_tc_kernel(const In *v, const In *d_o, DplrTcBackward x, In *dv, DplrTcTerms y,
                                DeviceChunkTable t, ChunkDims d) {
  using S = DplrBwdWyShared<In, K, V>;
  constexpr int NK = K / 16, NV = V / 16; // n tiles of a warp's half of a C x K, C x V result
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  S &s = *reinterpret_cast<S *>(shared_bytes);
  const int c = blockIdx.x, hd = blockIdx.y, tid = threadIdx.x, warp = tid / 32;
  const ChunkRows rows = chunk_rows(t, c);
  const int n = rows.n;
  const long row_at = static_cast<long>(rows.bos) * d.H + hd; // row bos of head hd
  const long key_stride = static_cast<long>(d.H) * K, value_stride = static_cast<long>(d.H) * V;
  const long score_stride = static_cast<long>(d.H) * C;
  const long state_at = (static_cast<long>(c) * d.H + hd) * K * V;
  copy_rows_async(&s.v[0][0], S::LV, v + row_at * V, value_stride, C, n, V);
  copy_rows_async(&s.v2[0][0], S::LV, static_cast<const In *>(x.v2) + row_at * V, value_stride, C,
                  n, V);
  copy_rows_async(&s.d_o[0][0], S::LV, d_o + row_at * V, value_stride, C, n, V);
  copy_rows_async(&s.dv2[0][0], S::LV, static_cast<const In *>(x.dv2) + row_at * V, value_stride, C,
                  n, V);
  copy_rows_async(&s.states.h[0][0], S::LV, static_cast<const In *>(x.h) + state_at, V, K, K, V);
  copy_rows_async(&s.states.dh[0][0], S::LV, static_cast<const In *>(x.dh) + state_at, V, K, K, V);
  copy_rows_async(&s.me[0][0], S::LC, static_cast<const In *>(x.mE) + row_at * C, score_stride, C,
                  n, C);
  copy_rows_async(&s.bk[0][0], S::LC, static_cast<const In *>(x.A_bk) + row_at * C, score_stride, C,
                  n, C);
  copy_rows_async(&s.qk[0][0], S::LC, static_cast<const In *>(x.A_qk) + row_at * C, score_stride, C,
                  n, C);
  copy_rows_async(&s.kd[0][0], S::LK, static_cast<const In *>(x.kd) + row_at * K, key_stride, C, n,
                  K);
  mma::commit_copies();
  mma::wait_copies();
  __syncthreads();
  const int row0 = SUB * (warp % 4), side = warp / 4;
  const int kcol0 = K / 2 * side, vcol0 = V / 2 * side;
  const auto same = [](float z) { return z; };

  // -- Y = (-E)^T dv2; rowsum(h . dh) per key
  {
    mma::Acc acc[NV];
    transposed_times_rows(acc, &s.me[0][0], S::LC, row0, &s.dv2[0][0], S::LV, vcol0, row0, C);
#pragma unroll
    for (int nt = 0; nt < NV; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        s.y[row0 + mma::acc_row(e)][vcol0 + nt * 8 + mma::acc_col(e)] = to<In>(acc[nt].x[e]);
    if (tid < K) {
      float sum = 0;
      for (int j = 0; j < V; ++j)
        sum += val(s.states.h[tid][j]) * val(s.states.dh[tid][j]);
      y.h_dh[(static_cast<long>(c) * d.H + hd) * K + tid] = sum;
    }
  }
  __syncthreads();

  // -- dv = kd dh + A_qk^T dO + A_bk^T Y
  {
    mma::Acc acc[NV];
    rows_times(acc, &s.kd[0][0], S::LK, row0, &s.states.dh[0][0], S::LV, vcol0, K);
    transposed_times_rows(acc, &s.qk[0][0], S::LC, row0, &s.d_o[0][0], S::LV, vcol0, row0, C);
    transposed_times_rows(acc, &s.bk[0][0], S::LC, row0, &s.y[0][0], S::LV, vcol0, row0, C);
    store_rows(dv, acc, row0, vcol0, n, row_at * V, value_stride,
               [](int, int, float z) { return z; });
  }
  // -- dO h^T, v dh^T, v2 dh^T out in fp32; dw = -dv2 h^T
  {
    mma::Acc acc[NK];
    rows_times_transposed(acc, &s.d_o[0][0], S::LV, row0, &s.states.h[0][0], S::LV, kcol0, V);
    store_rows_f32<K>(y.dO_h, acc, row0, kcol0, n, row_at, key_stride, same);
  }
  {
    mma::Acc acc[NK];
    rows_times_transposed(acc, &s.v[0][0], S::LV, row0, &s.states.dh[0][0], S::LV, kcol0, V);
    store_rows_f32<K>(y.v_dh, acc, row0, kcol0, n, row_at, key_stride, same);
  }
  {
    mma::Acc acc[NK];
    rows_times_transposed(acc, &s.v2[0][0], S::LV, row0, &s.states.dh[0][0], S::LV, kcol0, V);
    store_rows_f32<K>(y.v2_dh, acc, row0, kcol0, n, row_at, key_stride, same);
  }
  {
    mma::Acc acc[NK];
    rows_times_transposed(acc, &s.dv2[0][0], S::LV, row0, &s.states.h[0][0], S::LV, kcol0, V);
#pragma unroll
    for (int nt = 0; nt < NK; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        s.dw[row0 + mma::acc_row(e)][kcol0 + nt * 8 + mma::acc_col(e)] = to<In>(-acc[nt].x[e]);
  }
  __syncthreads(); // h, dh, A_qk and A_bk are read: their places are free

  // -- bv and bl in; dA_qk, dA_qa, dA_bk (rows moved up) staged and stored
  copy_rows_async(&s.wy.bv[0][0], S::LV, static_cast<const In *>(x.bv) + row_at * V, value_stride,
                  C, n, V);
  copy_rows_async(&s.wy.bl[0][0], S::LK, static_cast<const In *>(x.bl) + row_at * K, key_stride, C,
                  n, K);
  mma::commit_copies();
  {
    mma::Acc acc[C / 8];
    lower_rows_times_transposed(acc, &s.d_o[0][0], S::LV, row0, &s.v[0][0], S::LV, side, V);
    stage_score_gradient(acc, row0, side, false, s.wy.dqk, y.diag_qk, rows, row_at, d.H, 1.0f);
  }
  {
    mma::Acc acc[C / 8];
    lower_rows_times_transposed(acc, &s.d_o[0][0], S::LV, row0, &s.v2[0][0], S::LV, side, V);
    stage_score_gradient(acc, row0, side, false, s.wy.dqa, y.diag_qa, rows, row_at, d.H, 1.0f);
  }
  {
    mma::Acc acc[C / 8];
    lower_rows_times_transposed(acc, &s.y[0][0], S::LV, row0, &s.v[0][0], S::LV, side, V);
    stage_score_gradient(acc, row0, side, true, s.qk, y.diag_bk_up, rows, row_at, d.H, 1.0f);
  }
  if (tid < C) { // the last row moved up: zero (its diagonal too, where the chunk is full)
    s.qk[C - 1][tid] = to<In>(0.0f);
    s.bk[C - 1][tid] = to<In>(0.0f);
    if (tid == 0 && n == C) {
      y.diag_bk_up[row_at + static_cast<long>(C - 1) * d.H] = 0.0f;
      y.diag_ba_up[row_at + static_cast<long>(C - 1) * d.H] = 0.0f;
    }
  }
  mma::wait_copies();
  __syncthreads();
  store_scores(static_cast<In *>(y.dA_qk), s.wy.dqk, rows, hd, d);
  store_scores(static_cast<In *>(y.dA_qa), s.wy.dqa, rows, hd, d);
  store_scores(static_cast<In *>(y.dA_bk_up), s.qk, rows, hd, d);

  // -- dE (j < i), in the input type; E^T dw out in fp32
  {
    mma::Acc acc[C / 8];
    lower_rows_times_transposed(acc, &s.dv2[0][0], S::LV, row0, &s.wy.bv[0][0], S::LV, side, V);
    lower_rows_times_transposed(acc, &s.dw[0][0], S::LK, row0, &s.wy.bl[0][0], S::LK, side, K);
    each_entry_of_side(acc, row0, side,
                       [&](int i, int j, float z) { s.wy.de[i][j] = to<In>(j < i ? -z : 0.0f); });
  }
  {
    mma::Acc acc[NK];
    transposed_times_rows(acc, &s.me[0][0], S::LC, row0, &s.dw[0][0], S::LK, kcol0, row0, C);
    store_rows_f32<K>(y.Et_dw, acc, row0, kcol0, n, row_at, key_stride, [](float z) { return -z; });
  }
  __syncthreads();
  // -- Te = E^T dE = -((-E)^T dE) on the warp's rows and half the columns
  {
    mma::Acc acc[C / 16];
    transposed_times_rows(acc, &s.me[0][0], S::LC, row0, &s.wy.de[0][0], S::LC, C / 2 * side, row0,
                          C);
#pragma unroll
    for (int nt = 0; nt < C / 16; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        s.wy.te[row0 + mma::acc_row(e)][C / 2 * side + nt * 8 + mma::acc_col(e)] =
            to<In>(-acc[nt].x[e]);
  }
  __syncthreads();
  // -- dA_ba = Te (-E)^T (j < i), rows moved up
  {
    mma::Acc acc[C / 8];
    lower_rows_times_transposed(acc, &s.wy.te[0][0], S::LC, row0, &s.me[0][0], S::LC, side, C);
    stage_score_gradient(acc, row0, side, true, s.bk, y.diag_ba_up, rows, row_at, d.H, 1.0f);
  }
  __syncthreads();
  store_scores(static_cast<In *>(y.dA_ba_up), s.bk, rows, hd, d);
}

// chunk_dplr_bwd_dqk_tc: the per-key products, from the four score gradients of
// chunk_dplr_bwd_wy_tc (their diagonals apart, in fp32; U_bk, U_ba are dA_bk, dA_ba with their
// rows moved up, row i of d_up is d_{i+1}):
//   dq~ = e^g . (dO h^T) + (dA_qk . D) k + (dA_qa . D) a
//   dk  = e^{gl - g} . (v dh^T) + (dA_qk . D)^T q~ + (U_bk . D)^T d_up
//   da  = e^{gl - g} . (v2 dh^T) + (dA_qa . D)^T q~ + (U_ba . D)^T d_up
//   dd_{i+1} = e^{g_i} . (E^T dw)_{i+1} + ((U_bk . D) k + (U_ba . D) a)_i,  dd_0 = (E^T dw)_0
//   dG = q~ . dq~ - k . dk - a . da + (d . dd of the row below); on the last row also e^{gl} .
//        rowsum(h . dh) + sum_j (k_j . e^{gl - g_j} . (v_j dh^T) + a_j . e^{gl - g_j} . (v2_j
//        dh^T)), which is rowsum(h' . dh) for h' the state after the chunk
//   dgk = dG's suffix sum inside the chunk (chunk_local_cumsum_reverse: g_cum is local)
// The products with D are split at 16-row sub-chunks as gla's backward splits its own
// (lower_decayed_products against the sub-chunk's first row, upper_decayed_products against its
// last; gpu/chunk_gla_bwd_tc.cu's header argues the bounds), the diagonal block's wide rows summed
// term by term in fp32; the products that share a decayed factor take it once (k: dq~'s and dd's;
// a: likewise; q~: dk's and da's; d_up: likewise). A warp takes its half of the keys a quarter at
// a time, and writes its entries of dG to shared memory for the suffix sums.
template <class T, int K> struct DplrBwdDqkShared {
  static constexpr int LK = K + PAD, LC = C + PAD, LG = K + 4;
  T q[C][LK], k[C][LK];
  T a[C][LK];
  T af[C + 1][LK]; // -d (flash-linear-attention's a) of the chunk's rows, zeros below: from row
                   // 1 on, -d_up
  T dqk[C][LC], dqa[C][LC], ubk[C][LC], uba[C][LC];
  float dG[C][LG];
  float diag[4][C];       // the diagonals of dA_qk, dA_qa, U_bk, U_ba
  float last[C / SUB][K]; // each row block's part of the last row's sum over j, per key
  ChunkGates<K> gates;
};

template <class In, int K>
__global__ void __launch_bounds__(BWD_THREADS)
    chunk_dplr_bwd_dqk_tc_kernel(const In *q, const In *k, const In *a_fla, const In *b_fla,
                                 const float *g, DplrTcTerms y, In *dq, In *dk, In *da_fla,
                                 In *db_fla, float *dgk, DeviceChunkTable t, ChunkDims d) {
  using S = DplrBwdDqkShared<In, K>;
  constexpr int NQ = K / 32, LG = ChunkGates<K>::LG; // n tiles of a warp's quarter of the keys
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  S &s = *reinterpret_cast<S *>(shared_bytes);
  const int c = blockIdx.x, hd = blockIdx.y, tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const ChunkRows rows = chunk_rows(t, c);
  const int n = rows.n;
  const long row_at = static_cast<long>(rows.bos) * d.H + hd; // row bos of head hd
  const long key_stride = static_cast<long>(d.H) * K, score_stride = static_cast<long>(d.H) * C;
  copy_gates_async<K, false>(s.gates, g, rows, hd, d); // first, and summed while the rest arrive
  mma::commit_copies();
  copy_rows_async(&s.q[0][0], S::LK, q + row_at * K, key_stride, C, n, K);
  copy_rows_async(&s.k[0][0], S::LK, k + row_at * K, key_stride, C, n, K);
  copy_rows_async(&s.a[0][0], S::LK, b_fla + row_at * K, key_stride, C, n, K);
  copy_rows_async(&s.af[0][0], S::LK, a_fla + row_at * K, key_stride, C + 1, n, K);
  copy_rows_async(&s.dqk[0][0], S::LC, static_cast<const In *>(y.dA_qk) + row_at * C, score_stride,
                  C, n, C);
  copy_rows_async(&s.dqa[0][0], S::LC, static_cast<const In *>(y.dA_qa) + row_at * C, score_stride,
                  C, n, C);
  copy_rows_async(&s.ubk[0][0], S::LC, static_cast<const In *>(y.dA_bk_up) + row_at * C,
                  score_stride, C, n, C);
  copy_rows_async(&s.uba[0][0], S::LC, static_cast<const In *>(y.dA_ba_up) + row_at * C,
                  score_stride, C, n, C);
  mma::commit_copies();
  if (tid < C) { // the moved-up rows past n - 2 are zero
    const long at = row_at + static_cast<long>(tid) * d.H;
    s.diag[0][tid] = tid < n ? y.diag_qk[at] : 0.0f;
    s.diag[1][tid] = tid < n ? y.diag_qa[at] : 0.0f;
    s.diag[2][tid] = tid < n - 1 ? y.diag_bk_up[at] : 0.0f;
    s.diag[3][tid] = tid < n - 1 ? y.diag_ba_up[at] : 0.0f;
  }
  mma::wait_copies_but_last(); // the gates
  sum_chunk_gates<K, false>(s.gates, rows, hd, d, nullptr);
  mma::wait_copies();
  __syncthreads();
  const float(*g_cum)[LG] = s.gates.g;
  const int row0 = SUB * (warp % 4), side = warp / 4;
  const float scale = d.scale;
  // a [B*T, H, K] fp32 term of row i (zero past n)
  const auto term = [&](const float *x, int i, int col) {
    return i < n ? x[(row_at + static_cast<long>(i) * d.H) * K + col] : 0.0f;
  };
  // the factors scaled up: k and a against the first row, q and d_up against the last
  const unsigned suffix = wide_rows<In, K>(g_cum, row0, row0, 1.0f,
                                           fmaxf(factor_magnitude<In, K>(&s.k[0][0], S::LK, row0),
                                                 factor_magnitude<In, K>(&s.a[0][0], S::LK, row0)));
  const unsigned prefix =
      wide_rows<In, K>(g_cum, row0, row0 + SUB - 1, -1.0f,
                       fmaxf(factor_magnitude<In, K>(&s.q[0][0], S::LK, row0),
                             factor_magnitude<In, K>(&s.af[1][0], S::LK, row0)));
  float left_out[2][NQ * 4];

  for (int quarter = 0; quarter < 2; ++quarter) {
    const int col0 = K / 2 * side + K / 4 * quarter;
    // f(i, col, nt, e) for this lane's entries of the warp's rows and the quarter's key columns
    const auto each = [&](auto f) {
#pragma unroll
      for (int nt = 0; nt < NQ; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          f(row0 + mma::acc_row(e), col0 + nt * 8 + mma::acc_col(e), nt, e);
    };
    // the first three terms of each result
    mma::Acc dq_t[NQ], dk_t[NQ], da_t[NQ], dd_t[NQ]; // dd_t row i: dd_{i+1}
    float column[NQ][2] = {}; // this lane's part of the last row's sum over j, per column
    each([&](int i, int col, int nt, int e) {
      const float qi = val(s.q[i][col]) * scale, ki = val(s.k[i][col]), ai = val(s.a[i][col]);
      const float d_up = -val(s.af[i + 1][col]),
                  to_end = fast_exp(g_cum[C - 1][col] - g_cum[i][col]);
      const float k_out = to_end * term(y.v_dh, i, col), a_out = to_end * term(y.v2_dh, i, col);
      column[nt][e % 2] += ki * k_out + ai * a_out;
      dq_t[nt].x[e] =
          fast_exp(g_cum[i][col]) * term(y.dO_h, i, col) + s.diag[0][i] * ki + s.diag[1][i] * ai;
#ifdef RULEPROOF_PLANTED_BUG // gpu_check_planted only: a deliberate bug, dk without the diagonal
                             // term of dA_bk
      dk_t[nt].x[e] = k_out + s.diag[0][i] * qi;
#else
      dk_t[nt].x[e] = k_out + s.diag[0][i] * qi + s.diag[2][i] * d_up;
#endif
      da_t[nt].x[e] = a_out + s.diag[1][i] * qi + s.diag[3][i] * d_up;
      dd_t[nt].x[e] = s.diag[2][i] * ki + s.diag[3][i] * ai +
                      fast_exp(g_cum[i][col]) * term(y.Et_dw, i + 1, col);
    });
    // dq~ and dd against k, then against a (lower, against the sub-chunk's first row)
    for (int pass = 0; pass < 2; ++pass) {
      const In *const lower[2] = {pass == 0 ? &s.dqk[0][0] : &s.dqa[0][0],
                                  pass == 0 ? &s.ubk[0][0] : &s.uba[0][0]};
      const In *y_rows = pass == 0 ? &s.k[0][0] : &s.a[0][0];
      mma::Acc acc[2][NQ];
      lower_decayed_products(acc, lower, S::LC, y_rows, S::LK, g_cum, row0, col0, suffix);
      if (suffix)
        for (int m = 0; m < 2; ++m)
          lower_left_out(left_out[m], lower[m], S::LC, y_rows, S::LK, g_cum, row0, col0, suffix);
      each([&](int i, int col, int nt, int e) {
        dq_t[nt].x[e] += lower_decayed_entry(acc[0][nt].x[e], g_cum, row0, i, col, suffix,
                                             left_out[0], 4 * nt + e);
        dd_t[nt].x[e] += lower_decayed_entry(acc[1][nt].x[e], g_cum, row0, i, col, suffix,
                                             left_out[1], 4 * nt + e);
      });
    }
    // dk and da against q~, then against d_up (upper, against the sub-chunk's last row)
    for (int pass = 0; pass < 2; ++pass) {
      const In *const lower[2] = {pass == 0 ? &s.dqk[0][0] : &s.ubk[0][0],
                                  pass == 0 ? &s.dqa[0][0] : &s.uba[0][0]};
      const In *y_rows = pass == 0 ? &s.q[0][0] : &s.af[1][0];
      const float y_scale = pass == 0 ? scale : -1.0f; // q~ = scale q, d_up = -(a_fla moved up)
      mma::Acc acc[2][NQ];
      upper_decayed_products(acc, lower, S::LC, y_rows, S::LK, g_cum, row0, col0, prefix,
                             row0 + SUB - 1);
      if (prefix)
        for (int m = 0; m < 2; ++m)
          upper_left_out(left_out[m], lower[m], S::LC, y_rows, S::LK, g_cum, row0, col0, prefix);
      each([&](int i, int col, int nt, int e) {
        dk_t[nt].x[e] += y_scale * upper_decayed_entry(acc[0][nt].x[e], g_cum, row0, i, col, prefix,
                                                       left_out[0], 4 * nt + e);
        da_t[nt].x[e] += y_scale * upper_decayed_entry(acc[1][nt].x[e], g_cum, row0, i, col, prefix,
                                                       left_out[1], 4 * nt + e);
      });
    }
    // dG = q~ . dq~ - k . dk - a . da + d_{i+1} . dd_{i+1}; the outputs
    each([&](int i, int col, int nt, int e) {
      s.dG[i][col] = val(s.q[i][col]) * scale * dq_t[nt].x[e] - val(s.k[i][col]) * dk_t[nt].x[e] -
                     val(s.a[i][col]) * da_t[nt].x[e] - val(s.af[i + 1][col]) * dd_t[nt].x[e];
    });
    const auto same = [](int, int, float z) { return z; };
    store_rows(dq, dq_t, row0, col0, n, row_at * K, key_stride,
               [scale](int, int, float z) { return scale * z; });
    store_rows(dk, dk_t, row0, col0, n, row_at * K, key_stride, same);
    store_rows(db_fla, da_t, row0, col0, n, row_at * K, key_stride, same);
    store_rows(da_fla, dd_t, row0, col0, n - 1, (row_at + d.H) * K, key_stride,
               [](int, int, float z) { return -z; });
#pragma unroll
    for (int nt = 0; nt < NQ; ++nt)
#pragma unroll
      for (int u = 0; u < 2; ++u) {
        const float sum = column_sum(column[nt][u]);
        if (lane / 4 == 0)
          s.last[row0 / SUB][col0 + nt * 8 + 2 * lane + u] = sum;
      }
  }
  if (warp == 0) // row 0 of flash-linear-attention's da: -dd_0 = -(E^T dw)_0
    for (int col = lane; col < K; col += 32)
      da_fla[row_at * K + col] = to<In>(-term(y.Et_dw, 0, col));
  // -- each key's suffix sum of dG, the last row's terms first
  __syncthreads();
  if (tid < K) {
    float sum = fast_exp(g_cum[C - 1][tid]) * y.h_dh[(static_cast<long>(c) * d.H + hd) * K + tid];
    for (int b = 0; b < C / SUB; ++b)
      sum += s.last[b][tid];
    for (int i = n - 1; i >= 0; --i) {
      sum += s.dG[i][tid];
      dgk[(row_at + static_cast<long>(i) * d.H) * K + tid] = sum;
    }
  }
}

template <class In, int K, int V>
void launch_wy(const void *q, const void *k, const void *v, const void *a, const void *b,
               const float *gk, const DplrTcScratch &x, const DplrTcStages &st,
               const DeviceChunkTable &t, const ChunkDims &d) {
  const int bytes = static_cast<int>(sizeof(DplrWyShared<In, K, V>));
  auto *kernel = chunk_dplr_wy_tc_kernel<In, K, V>;
  allow_shared_memory(kernel, bytes, "chunk_dplr_wy_tc_kernel");
  kernel<<<dim3(t.NC, d.H), WY_THREADS, bytes>>>(in<In>(q), in<In>(k), in<In>(v), in<In>(a),
                                                 in<In>(b), gk, x, st, t, d);
}

template <class In, int K, int V>
void launch_o(const void *v, const DplrTcScratch &x, const void *h, const void *v2, void *o,
              const DeviceChunkTable &t, const ChunkDims &d) {
  const int bytes = static_cast<int>(sizeof(DplrOShared<In, K, V>));
  auto *kernel = chunk_dplr_fwd_o_tc_kernel<In, K, V>;
  allow_shared_memory(kernel, bytes, "chunk_dplr_fwd_o_tc_kernel");
  kernel<<<dim3(t.NC, d.H), O_THREADS, bytes>>>(in<In>(v), in<In>(x.qd), in<In>(x.A_qk),
                                                in<In>(x.A_qa), in<In>(h), in<In>(v2), out<In>(o),
                                                t, d);
}

template <class In, int K, int V>
void launch_bwd_wy(const void *v, const void *d_o, const DplrTcBackward &x, void *dv,
                   const DplrTcTerms &y, const DeviceChunkTable &t, const ChunkDims &d) {
  const int bytes = static_cast<int>(sizeof(DplrBwdWyShared<In, K, V>));
  auto *kernel = chunk_dplr_bwd_wy_tc_kernel<In, K, V>;
  allow_shared_memory(kernel, bytes, "chunk_dplr_bwd_wy_tc_kernel");
  kernel<<<dim3(t.NC, d.H), BWD_THREADS, bytes>>>(in<In>(v), in<In>(d_o), x, out<In>(dv), y, t, d);
}

template <class In, int K>
void launch_bwd_dqk(const void *q, const void *k, const void *a, const void *b, const float *gk,
                    const DplrTcTerms &y, void *dq, void *dk, void *da, void *db, float *dgk,
                    const DeviceChunkTable &t, const ChunkDims &d) {
  const int bytes = static_cast<int>(sizeof(DplrBwdDqkShared<In, K>));
  auto *kernel = chunk_dplr_bwd_dqk_tc_kernel<In, K>;
  allow_shared_memory(kernel, bytes, "chunk_dplr_bwd_dqk_tc_kernel");
  kernel<<<dim3(t.NC, d.H), BWD_THREADS, bytes>>>(in<In>(q), in<In>(k), in<In>(a), in<In>(b), gk, y,
                                                  out<In>(dq), out<In>(dk), out<In>(da),
                                                  out<In>(db), dgk, t, d);
}

} // namespace

void launch_chunk_dplr_bwd_wy_tc(const void *v, const void *d_o, const DplrTcBackward &x, void *dv,
                                 const DplrTcTerms &y, const DeviceChunkTable &t,
                                 const ChunkDims &d) {
  if (t.NC == 0)
    return;
  with_sizes(d, [&](auto z, auto ks, auto vs) {
    launch_bwd_wy<decltype(z), decltype(ks)::value, decltype(vs)::value>(v, d_o, x, dv, y, t, d);
  });
  check("chunk_dplr_bwd_wy_tc_kernel");
}

void launch_chunk_dplr_bwd_dqk_tc(const void *q, const void *k, const void *a, const void *b,
                                  const float *gk, const DplrTcTerms &y, void *dq, void *dk,
                                  void *da, void *db, float *dgk, const DeviceChunkTable &t,
                                  const ChunkDims &d) {
  if (t.NC == 0)
    return;
  with_input_type(d, [&](auto z) {
    using In = decltype(z);
    d.K == 64 ? launch_bwd_dqk<In, 64>(q, k, a, b, gk, y, dq, dk, da, db, dgk, t, d)
              : launch_bwd_dqk<In, 128>(q, k, a, b, gk, y, dq, dk, da, db, dgk, t, d);
  });
  check("chunk_dplr_bwd_dqk_tc_kernel");
}

void launch_chunk_dplr_wy_tc(const void *q, const void *k, const void *v, const void *a,
                             const void *b, const float *gk, const DplrTcScratch &x,
                             const DplrTcStages &st, const DeviceChunkTable &t,
                             const ChunkDims &d) {
  if (t.NC == 0)
    return;
  with_sizes(d, [&](auto y, auto ks, auto vs) {
    launch_wy<decltype(y), decltype(ks)::value, decltype(vs)::value>(q, k, v, a, b, gk, x, st, t,
                                                                     d);
  });
  check("chunk_dplr_wy_tc_kernel");
}

void launch_chunk_dplr_fwd_o_tc(const void *v, const DplrTcScratch &x, const void *h,
                                const void *v2, void *o, const DeviceChunkTable &t,
                                const ChunkDims &d) {
  if (t.NC == 0)
    return;
  with_sizes(d, [&](auto y, auto ks, auto vs) {
    launch_o<decltype(y), decltype(ks)::value, decltype(vs)::value>(v, x, h, v2, o, t, d);
  });
  check("chunk_dplr_fwd_o_tc_kernel");
}

} // namespace ruleproof::gpu::detail
