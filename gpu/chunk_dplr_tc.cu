// ruleproof: dplr's forward on tensor cores (flash-linear-attention's parameterisation, per-key
// gate gk), Hopper (sm_90). The path KernelPath::tensor_cores of chunk_dplr_fwd
// (gpu/chunk_dplr.hpp); the CUDA-core path is gpu/chunk_dplr.cu. Every matrix product runs as
// mma.sync m16n8k16 with operands in the input type (bf16 or fp16) and fp32 sums
// (gpu/detail/mma.cuh); gates, the triangular solve and the running state stay fp32. Judged under
// the tensor-core policy (gpu/twin.hpp).
//
// CPU reference, one grep away: reference/dplr/chunk.hpp (chunk_dplr_fwd_wy:
// chunk_dplr_fwd_intra, solve_tril, recompute_w_c; chunk_dplr_fwd_h; chunk_dplr_fwd_o), seed 001's
// WY form; gpu/chunk_dplr.cu's header gives the formulas in the engine's form S_t = (A_t - a_t
// d_t^T) S_{t-1} + k_t v_t^T with a = flash-linear-attention's b and d = -(its a).
//
// Three kernels. Per chunk of n <= 64 rows, g = g_cum its local cumulative gate, gx its row above
// (0 on the chunk's first row), q~ = scale q, gl = g of row n - 1:
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
// No launcher waits for its kernels (check, not check_sync).
#include "detail/chunk_device.cuh" // at_state, at_score, chunk_rows, check, allow_shared_memory,
                                   // with_input_type, in, out, C
#include "detail/dplr_launch.hpp"
#include "detail/gla_tc.cuh" // to, val, fast_exp, copy_rows_async, ChunkGates, chunk_gates,
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
    struct {
      float a[C][LF];
      float part[C / SUB - 1][SUB][SUB + 1];
    } solve;
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
  copy_rows_async(&s.q[0][0], S::LK, q + row_at * K, key_stride, C, n, K);
  copy_rows_async(&s.k[0][0], S::LK, k + row_at * K, key_stride, C, n, K);
  copy_rows_async(&s.a[0][0], S::LK, b_fla + row_at * K, key_stride, C, n, K);
  copy_rows_async(&s.d[0][0], S::LK, a_fla + row_at * K, key_stride, C + 1, n, K);
  copy_rows_async(&s.v[0][0], S::LV, v + row_at * V, static_cast<long>(d.H) * V, C, n, V);
  mma::commit_copies();
  chunk_gates<K, false>(s.gates, g, rows, hd, d, st.g_cum);
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
  const unsigned pairwise_rows = wide_rows<In, K>(g_cum, row0, row0, 1.0f);
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
  // w's right factor with -E, -d . e^gx, in the place of q (read by now)
  for (int e = tid; e < C * K; e += WY_THREADS) {
    const int i = e / K, col = e % K;
    const float up = i > 0 ? fast_exp(g_cum[i - 1][col]) : 1.0f;
    s.q[i][col] = to<In>(val(s.d[i][col]) * up);
  }

  // -- E = (I + A_ba)^-1 in fp32, then -E in the input type in the place of A_qk (stored by now)
  __syncthreads(); // the gates' place is free for the solve
  unit_lower_inverse(s.ba, s.solve.a, s.solve.part);
  for (int e = tid; e < C * C; e += WY_THREADS) {
    const int i = e / C, j = e % C;
    const In e16 = to<In>(s.solve.a[i][j]);
    s.qk[i][j] = to<In>(-val(e16)); // exact: the rounding is symmetric
    if (st.E && i < n)
      st.E[at_score(rows.bos + i, hd, j, d)] = val(e16);
  }
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

} // namespace

void launch_chunk_dplr_wy_tc(const void *q, const void *k, const void *v, const void *a,
                             const void *b, const float *gk, const DplrTcScratch &x,
                             const DplrTcStages &st, const DeviceChunkTable &t,
                             const ChunkDims &d) {
  if (t.NC == 0)
    return;
  with_input_type(d, [&](auto y) {
    using In = decltype(y);
    if (d.K == 64)
      d.V == 64 ? launch_wy<In, 64, 64>(q, k, v, a, b, gk, x, st, t, d)
                : launch_wy<In, 64, 128>(q, k, v, a, b, gk, x, st, t, d);
    else
      d.V == 64 ? launch_wy<In, 128, 64>(q, k, v, a, b, gk, x, st, t, d)
                : launch_wy<In, 128, 128>(q, k, v, a, b, gk, x, st, t, d);
  });
  check("chunk_dplr_wy_tc_kernel");
}

void launch_chunk_dplr_fwd_o_tc(const void *v, const DplrTcScratch &x, const void *h,
                                const void *v2, void *o, const DeviceChunkTable &t,
                                const ChunkDims &d) {
  if (t.NC == 0)
    return;
  with_input_type(d, [&](auto y) {
    using In = decltype(y);
    if (d.K == 64)
      d.V == 64 ? launch_o<In, 64, 64>(v, x, h, v2, o, t, d)
                : launch_o<In, 64, 128>(v, x, h, v2, o, t, d);
    else
      d.V == 64 ? launch_o<In, 128, 64>(v, x, h, v2, o, t, d)
                : launch_o<In, 128, 128>(v, x, h, v2, o, t, d);
  });
  check("chunk_dplr_fwd_o_tc_kernel");
}

} // namespace ruleproof::gpu::detail
