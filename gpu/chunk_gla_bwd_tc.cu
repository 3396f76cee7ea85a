// ruleproof: the chunkwise GLA backward on tensor cores (gla: per-key gate; simple_gla: scalar
// gate), Hopper (sm_90): chunk_bwd_dqkv of every chunk at once, the path
// KernelPath::tensor_cores of chunk_gla_bwd (gpu/chunk_gla.hpp; the CUDA-core path is
// chunk_bwd_dqkv_kernel in gpu/chunk_gla.cu). Every matrix product runs as mma.sync m16n8k16
// with operands in the input type (bf16 or fp16) and fp32 sums (gpu/detail/mma.cuh); gates and
// their exponentials stay fp32. Judged under the tensor-core policy (gpu/twin.hpp).
//
// CPU reference, one grep away: reference/gla/chunk.hpp (chunk_bwd_dqkv, with ChunkDecay's
// grad_left and grad_right of reference/shared/chunk.hpp for the scores' decays).
//
// Before it, on the same path (gpu/chunk_gla.cpp): chunk_gla_scores_tc (A and kd), the
// sequential kernel forwards (the states h at each chunk's start) and backwards (dh, the state
// gradient after each chunk), both stored in the input type. Per chunk of n <= 64 rows, g_cum its
// local cumulative gate, q~ = scale q, gl = g_cum of its last row (rows past n zero, their gates
// flat), dA = dO V^T:
//   dv_j  = sum_{i>=j} A_ij dO_i + (k_j . e^{gl - g_cum_j}) dh
//   dq~_i = e^{g_cum_i} . (dO_i h^T) + sum_{j<i} dA_ij k_j . e^{g_cum_i - g_cum_j}
//   dk_j  = e^{gl - g_cum_j} . (v_j dh^T) + sum_{i>j} dA_ij q~_i . e^{g_cum_i - g_cum_j}
//   dq = scale (dq~ + dA_ii k_i),  dk = dk + dA_ii q~_i,  dG = q~ . dq~ - k . dk
// (the terms of the diagonal dA_ii cancel in dG and are left out of it, as in the reference).
//
// chunk_gla_bwd_tc_kernel: grid (NC, H), 8 warps (a scalar gate's dG summed over the keys, per
// row, for chunk_bwd_dg); warp w owns rows [16 (w % 4), +16) and half
// the columns (w / 4) of dv, dq and dk, and the column tiles of parity w / 4 of dA. Every operand
// of the chunk is copied into shared memory at once (cp.async).
//
// The per-key decays (gla) are split at 16-row sub-chunks, as the forward's scores are
// (gpu/chunk_gla_tc.cu, whose header argues the extreme-gate properties):
//   dq~: for row i of sub-chunk I, against I's first row r: e^{g_i - g_r} sum_j dA_ij
//        (k_j e^{g_r - g_j}); the right factor is at most |k_j| below the diagonal block and at
//        most e^{spread} |k_j| inside it, where rows whose spread g_r - g_i passes spread_limit
//        (a suffix of the block) are left out of the product and summed term by term in fp32;
//   dk:  for row j of sub-chunk J, against J's last row r': e^{g_r' - g_j} sum_i dA_ij
//        (q~_i e^{g_i - g_r'}); the right factor is at most |q~_i| past the diagonal block, and
//        the block's rows whose spread g_i - g_r' passes the limit (a prefix) are summed term by
//        term.
// Every factor outside the products is at most 1. simple_gla's scalar gate needs no split: the
// one matrix dA . e^{g_i - g_j}, one exp per (row, column), rounded to the input type, gives
// both dq~ (times k) and dk (its transpose times q~).
#include "detail/chunk_device.cuh" // at_k, at_state, chunk_rows, check, allow_shared_memory,
                                   // with_input_type, in, out, C
#include "detail/gla_launch.hpp"
#include "detail/gla_tc.cuh" // to, val, copy_rows_async, ChunkGates, copy_gates_async, sum_chunk_gates, wide_rows,
                             // rows_times, rows_times_transposed, transposed_times_rows,
                             // store_rows, quad_sum, PAD, SUB
#include "detail/mma.cuh"

namespace ruleproof::gpu::detail {

namespace {

using namespace tc;

constexpr int BWD_THREADS = 256;

template <class T, int K, int V> struct BwdShared {
  static constexpr int LK = K + PAD, LV = V + PAD, LC = C + PAD;
  T q[C][LK], k[C][LK], kd[C][LK];
  T v[C][LV], d_o[C][LV];
  T h[K][LV], dh[K][LV]; // the state at the chunk's start, its gradient after the chunk
  T a[C][LC];            // the scores A
  T da[C][LC];           // dA below the diagonal (simple_gla: dA . e^{g_cum_i - g_cum_j})
  float da_diagonal[C];
  float dg_rows[2][C]; // simple_gla: each half of the keys' dG, summed, per row
  ChunkGates<K> gates;
};

template <class In, int K, int V, bool SCALAR>
__global__ void __launch_bounds__(BWD_THREADS)
    chunk_gla_bwd_tc_kernel(const In *q, const In *k, const In *v, const float *g, const In *d_o,
                            const In *A16, const In *kd, const In *h16, const In *dh16, In *dq,
                            In *dk, In *dv, float *dG, DeviceChunkTable t, ChunkDims d) {
  using S = BwdShared<In, K, V>;
  constexpr int NK = K / 16, NV = V / 16; // n tiles of a warp's half of dq (dk), of dv (8 each)
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  S &s = *reinterpret_cast<S *>(shared_bytes);
  const int c = blockIdx.x, hd = blockIdx.y, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const ChunkRows rows = chunk_rows(t, c);
  const int n = rows.n;
  const long row_at = static_cast<long>(rows.bos) * d.H + hd; // row bos of head hd
  const long state_at = (static_cast<long>(c) * d.H + hd) * K * V;
  copy_gates_async<K, SCALAR>(s.gates, g, rows, hd, d); // first, and summed while the rest arrive
  mma::commit_copies();
  copy_rows_async(&s.q[0][0], S::LK, q + row_at * K, static_cast<long>(d.H) * K, C, n, K);
  copy_rows_async(&s.k[0][0], S::LK, k + row_at * K, static_cast<long>(d.H) * K, C, n, K);
  copy_rows_async(&s.kd[0][0], S::LK, kd + row_at * K, static_cast<long>(d.H) * K, C, n, K);
  copy_rows_async(&s.v[0][0], S::LV, v + row_at * V, static_cast<long>(d.H) * V, C, n, V);
  copy_rows_async(&s.d_o[0][0], S::LV, d_o + row_at * V, static_cast<long>(d.H) * V, C, n, V);
  copy_rows_async(&s.a[0][0], S::LC, A16 + row_at * C, static_cast<long>(d.H) * C, C, n, C);
  copy_rows_async(&s.h[0][0], S::LV, h16 + state_at, V, K, K, V);
  copy_rows_async(&s.dh[0][0], S::LV, dh16 + state_at, V, K, K, V);
  mma::commit_copies();
  mma::wait_copies_but_last(); // the gates
  sum_chunk_gates<K, SCALAR>(s.gates, rows, hd, d, nullptr);
  mma::wait_copies();
  __syncthreads();
  const float(*g_cum)[ChunkGates<K>::LG] = s.gates.g;
  const auto g_at = [&](int i, int col) { return g_cum[i][SCALAR ? 0 : col]; };
  const float scale = d.scale;
  const int row0 = SUB * (warp % 4), side = warp / 4;
  const int kcol0 = K / 2 * side, vcol0 = V / 2 * side;

  // -- dA = dO V^T: its diagonal in fp32, the rest below it in the input type
  {
    mma::Acc acc[C / 8];
    lower_rows_times_transposed(acc, &s.d_o[0][0], S::LV, row0, &s.v[0][0], S::LV, side, V);
    each_entry_of_side(acc, row0, side, [&](int i, int j, float x) {
      if (j == i)
        s.da_diagonal[i] = x;
      s.da[i][j] = to<In>(j < i ? (SCALAR ? x * fast_exp(g_at(i, 0) - g_at(j, 0)) : x) : 0.0f);
    });
  }
  __syncthreads();

  // -- dv = A^T dO + kd dh on the warp's rows and columns
  {
    mma::Acc acc[NV];
    transposed_times_rows(acc, &s.a[0][0], S::LC, row0, &s.d_o[0][0], S::LV, vcol0, row0, C);
    rows_times(acc, &s.kd[0][0], S::LK, row0, &s.dh[0][0], S::LV, vcol0, K);
    store_rows(dv, acc, row0, vcol0, n, row_at * V, static_cast<long>(d.H) * V,
               [](int, int, float x) { return x; });
  }

  // -- dq~ = e^{g_cum} . (dO h^T) + the scores' part, on the warp's rows and key columns
  mma::Acc dq_t[NK]; // dq~, then q~ . dq~
  {
    mma::Acc inside[NK];
    rows_times_transposed(dq_t, &s.d_o[0][0], S::LV, row0, &s.h[0][0], S::LV, kcol0, V);
    unsigned pairwise = 0; // gla: the diagonal block's rows summed term by term (a suffix)
    float left_out[NK * 4];
    if (SCALAR) {
      rows_times(inside, &s.da[0][0], S::LC, row0, &s.k[0][0], S::LK, kcol0, row0 + SUB);
    } else {
      pairwise = wide_rows<In, K>(g_cum, row0, row0, 1.0f,
                                  factor_magnitude<In, K>(&s.k[0][0], S::LK, row0));
      lower_decayed_product(inside, &s.da[0][0], S::LC, &s.k[0][0], S::LK, g_cum, row0, kcol0,
                            pairwise);
      if (pairwise)
        lower_left_out(left_out, &s.da[0][0], S::LC, &s.k[0][0], S::LK, g_cum, row0, kcol0,
                       pairwise);
    }
#pragma unroll
    for (int nt = 0; nt < NK; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int i = row0 + mma::acc_row(e), col = kcol0 + nt * 8 + mma::acc_col(e);
        const float x = fast_exp(g_at(i, col)) * dq_t[nt].x[e] +
                        (SCALAR ? inside[nt].x[e]
                                : lower_decayed_entry(inside[nt].x[e], g_cum, row0, i, col,
                                                      pairwise, left_out, 4 * nt + e));
        const float qi = val(s.q[i][col]) * scale;
        dq_t[nt].x[e] = qi * x; // q~ . dq~, for dG
        inside[nt].x[e] = scale * (x + s.da_diagonal[i] * val(s.k[i][col]));
      }
    store_rows(dq, inside, row0, kcol0, n, row_at * K, static_cast<long>(d.H) * K,
               [](int, int, float x) { return x; });
  }

  // -- dk = e^{gl - g_cum} . (v dh^T) + the scores' part; dG = q~ . dq~ - k . dk
  {
    mma::Acc outside[NK], inside[NK];
    rows_times_transposed(outside, &s.v[0][0], S::LV, row0, &s.dh[0][0], S::LV, kcol0, V);
    const int r_end = row0 + SUB - 1; // gla: the reference row, the sub-chunk's last
#ifdef RULEPROOF_PLANTED_BUG // gpu_check_planted only: a deliberate bug, gla's right factors of dk
                             // against the row before the reference row
    const int r_right = r_end - 1;
#else
    const int r_right = r_end;
#endif
    unsigned pairwise = 0; // gla: the diagonal block's rows summed term by term (a prefix)
    float left_out[NK * 4];
    if (SCALAR) {
      transposed_times_rows(inside, &s.da[0][0], S::LC, row0, &s.q[0][0], S::LK, kcol0, row0, C);
    } else {
      pairwise = wide_rows<In, K>(g_cum, row0, r_end, -1.0f,
                                  factor_magnitude<In, K>(&s.q[0][0], S::LK, row0));
      upper_decayed_product(inside, &s.da[0][0], S::LC, &s.q[0][0], S::LK, g_cum, row0, kcol0,
                            pairwise, r_right);
      if (pairwise)
        upper_left_out(left_out, &s.da[0][0], S::LC, &s.q[0][0], S::LK, g_cum, row0, kcol0,
                       pairwise);
    }
    float row_sum[2] = {0, 0}; // simple_gla: dG of rows lane / 4 and lane / 4 + 8, summed
#pragma unroll
    for (int nt = 0; nt < NK; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int j = row0 + mma::acc_row(e), col = kcol0 + nt * 8 + mma::acc_col(e);
        const float x = fast_exp(g_at(C - 1, col) - g_at(j, col)) * outside[nt].x[e] +
                        scale * (SCALAR ? inside[nt].x[e]
                                        : upper_decayed_entry(inside[nt].x[e], g_cum, row0, j, col,
                                                              pairwise, left_out, 4 * nt + e));
        const float dG_jc = dq_t[nt].x[e] - val(s.k[j][col]) * x;
        if (SCALAR)
          row_sum[e / 2] += dG_jc;
        else if (j < n)
          dG[at_k(rows.bos + j, hd, col, d)] = dG_jc;
#ifdef RULEPROOF_PLANTED_BUG // gpu_check_planted only: a deliberate bug, simple_gla's dk without
                             // the diagonal's term
        outside[nt].x[e] = SCALAR ? x : x + s.da_diagonal[j] * val(s.q[j][col]) * scale;
#else
        outside[nt].x[e] = x + s.da_diagonal[j] * val(s.q[j][col]) * scale;
#endif
      }
    store_rows(dk, outside, row0, kcol0, n, row_at * K, static_cast<long>(d.H) * K,
               [](int, int, float x) { return x; });
    if (SCALAR) { // the scalar gate's dG: each row's sum over the keys
#pragma unroll
      for (int u = 0; u < 2; ++u) {
        row_sum[u] = quad_sum(row_sum[u]);
        if (lane % 4 == 0)
          s.dg_rows[side][row0 + lane / 4 + 8 * u] = row_sum[u];
      }
      __syncthreads();
      if (threadIdx.x < n)
        dG[row_at + static_cast<long>(threadIdx.x) * d.H] =
            s.dg_rows[0][threadIdx.x] + s.dg_rows[1][threadIdx.x];
    }
  }
}

// ---------------------------------------------------------------------------------------
// chunk_bwd_dg on the tensor-core path: dg = the reverse cumulative sum of dG [B*T, H, G] over
// each sequence, with rowsum(S_T . dS_T) added at its last row (summed over the keys for a scalar
// gate), in three steps parallel over chunks rather than one walk down each sequence (the CUDA-core
// chunk_bwd_dg_kernel, gpu/chunk_gla.cu):
//   chunk_dg_totals_kernel, grid (NC, H): each chunk's column sums of dG;
//   chunk_dg_carry_kernel, grid (N, H): each chunk's carry, the final state's term plus the
//     totals of the chunks after it (a walk over the sequence's chunks);
//   chunk_dg_apply_kernel, grid (NC, H): each chunk's reverse cumulative sum from its carry.
// G threads a block (K, or 32 for a scalar gate).
constexpr int dg_threads(int G) { return G == 1 ? 32 : G; }

__global__ void chunk_dg_totals_kernel(const float *__restrict__ dG, float *__restrict__ totals,
                                       DeviceChunkTable t, ChunkDims d) {
  const int c = blockIdx.x, hd = blockIdx.y, col = threadIdx.x;
  const ChunkRows rows = chunk_rows(t, c);
  if (col >= d.G)
    return;
  float x[C];
#pragma unroll
  for (int i = 0; i < C; ++i)
    x[i] = i < rows.n ? dG[(static_cast<long>(rows.bos + i) * d.H + hd) * d.G + col] : 0.0f;
  float sum = 0;
#pragma unroll
  for (int i = C - 1; i >= 0; --i)
    sum += x[i];
  totals[(static_cast<long>(c) * d.H + hd) * d.G + col] = sum;
}

__global__ void chunk_dg_carry_kernel(const float *__restrict__ totals, const float *ht,
                                      const float *dht, float *__restrict__ carry,
                                      DeviceChunkTable t, ChunkDims d) {
  __shared__ float term[MAX_K];
  const int n = blockIdx.x, hd = blockIdx.y, tid = threadIdx.x;
  // the final state's term, rowsum(S_T . dS_T), per key
  for (int key = tid; key < d.K; key += blockDim.x) {
    float acc = 0;
    if (ht && dht && t.seq_eos[n] > t.seq_bos[n])
      for (int j = 0; j < d.V; ++j)
        acc += ht[at_state(n, hd, key, j, d)] * dht[at_state(n, hd, key, j, d)];
    term[key] = acc;
  }
  __syncthreads();
  if (tid >= d.G)
    return;
  float running = term[tid];
  if (d.G == 1)
    for (int key = 1; key < d.K; ++key)
      running += term[key];
  for (int c = t.seq_first_chunk[n + 1] - 1; c >= t.seq_first_chunk[n]; --c) {
    const long at = (static_cast<long>(c) * d.H + hd) * d.G + tid;
    carry[at] = running;
    running += totals[at];
  }
}

__global__ void chunk_dg_apply_kernel(const float *__restrict__ dG, const float *__restrict__ carry,
                                      float *__restrict__ dg, DeviceChunkTable t, ChunkDims d) {
  const int c = blockIdx.x, hd = blockIdx.y, col = threadIdx.x;
  const ChunkRows rows = chunk_rows(t, c);
  if (col >= d.G)
    return;
  const auto at = [&](int i) { return (static_cast<long>(rows.bos + i) * d.H + hd) * d.G + col; };
  float x[C];
#pragma unroll
  for (int i = 0; i < C; ++i)
    x[i] = i < rows.n ? dG[at(i)] : 0.0f;
  float running = carry[(static_cast<long>(c) * d.H + hd) * d.G + col];
#pragma unroll
  for (int i = C - 1; i >= 0; --i) {
    running += x[i];
    if (i < rows.n)
      dg[at(i)] = running;
  }
}

template <class In, int K, int V, bool SCALAR>
void launch_bwd(const void *q, const void *k, const void *v, const float *g, const void *d_o,
                const TcScratch &scratch, const void *h16, const void *dh16, void *dq, void *dk,
                void *dv, float *dG, const DeviceChunkTable &t, const ChunkDims &d) {
  const int bytes = static_cast<int>(sizeof(BwdShared<In, K, V>));
  auto *kernel = chunk_gla_bwd_tc_kernel<In, K, V, SCALAR>;
  allow_shared_memory(kernel, bytes, "chunk_gla_bwd_tc_kernel");
  kernel<<<dim3(t.NC, d.H), BWD_THREADS, bytes>>>(
      in<In>(q), in<In>(k), in<In>(v), g, in<In>(d_o), in<In>(scratch.A16), in<In>(scratch.kd),
      in<In>(h16), in<In>(dh16), out<In>(dq), out<In>(dk), out<In>(dv), dG, t, d);
}

template <class In, int K, bool SCALAR>
void launch_bwd_v(const void *q, const void *k, const void *v, const float *g, const void *d_o,
                  const TcScratch &scratch, const void *h16, const void *dh16, void *dq, void *dk,
                  void *dv, float *dG, const DeviceChunkTable &t, const ChunkDims &d) {
  if (d.V == 64)
    launch_bwd<In, K, 64, SCALAR>(q, k, v, g, d_o, scratch, h16, dh16, dq, dk, dv, dG, t, d);
  else
    launch_bwd<In, K, 128, SCALAR>(q, k, v, g, d_o, scratch, h16, dh16, dq, dk, dv, dG, t, d);
}

} // namespace

void launch_chunk_gla_bwd_tc(const void *q, const void *k, const void *v, const float *g,
                             const void *d_o, const TcScratch &scratch, const void *h16,
                             const void *dh16, void *dq, void *dk, void *dv, float *dG,
                             const DeviceChunkTable &t, const ChunkDims &d) {
  if (t.NC == 0)
    return;
  with_input_type(d, [&](auto x) {
    using In = decltype(x);
    const auto run = [&](auto launch) {
      launch(q, k, v, g, d_o, scratch, h16, dh16, dq, dk, dv, dG, t, d);
    };
    if (d.G == 1)
      d.K == 64 ? run(launch_bwd_v<In, 64, true>) : run(launch_bwd_v<In, 128, true>);
    else
      d.K == 64 ? run(launch_bwd_v<In, 64, false>) : run(launch_bwd_v<In, 128, false>);
  });
  check("chunk_gla_bwd_tc_kernel");
}

void launch_chunk_gla_bwd_dg_tc(const float *dG, const float *ht, const float *dht, float *dg,
                                float *chunk_sums, const DeviceChunkTable &t, const ChunkDims &d) {
  if (t.NC == 0)
    return;
  float *totals = chunk_sums, *carry = chunk_sums + static_cast<long>(t.NC) * d.H * d.G;
  chunk_dg_totals_kernel<<<dim3(t.NC, d.H), dg_threads(d.G)>>>(dG, totals, t, d);
  check("chunk_dg_totals_kernel");
  chunk_dg_carry_kernel<<<dim3(t.N, d.H), dg_threads(d.G)>>>(totals, ht, dht, carry, t, d);
  check("chunk_dg_carry_kernel");
  chunk_dg_apply_kernel<<<dim3(t.NC, d.H), dg_threads(d.G)>>>(dG, carry, dg, t, d);
  check("chunk_dg_apply_kernel");
}

} // namespace ruleproof::gpu::detail
