// ruleproof: the chunkwise gated delta rule's backward on tensor cores (gated_delta_rule: scalar
// gate; kda: per-key gate), Hopper (sm_90): chunk_bwd_dqkwg and chunk_wy_bwd of every chunk at
// once, in one kernel, the path KernelPath::tensor_cores of chunk_delta_bwd (gpu/chunk_delta.hpp;
// the CUDA-core path is gpu/chunk_delta.cu). Every matrix product runs as mma.sync m16n8k16 with
// operands in the input type (bf16 or fp16) and fp32 sums (gpu/detail/mma.cuh); gates, beta and
// their products stay fp32. Judged under the tensor-core policy (gpu/twin.hpp).
//
// CPU reference, one grep away: reference/kda/chunk.hpp (chunk_bwd_dqkwg, chunk_wy_bwd,
// chunk_local_cumsum_reverse), seed 003's backward steps 5-7; gated_delta_rule is kda with its
// gate repeated over the keys (reference/kda/variant.hpp).
//
// Before it, on the same path (gpu/chunk_delta.cpp): chunk_delta_wy_tc (Aqk, A, w, kd, qd), the
// sequential kernel forwards (the states h at each chunk's start and v_new) and backwards (dh,
// the state gradient after each chunk, and dv2, the whole gradient of v_new), all stored in the
// input type; with RULEPROOF_DELTA_DH=uses gated_delta_rule's dh is not stored: the sequential
// kernel backwards makes the two things this kernel reads it for, v_new dh^T (dk_s before its
// factor, fp32) and sum(h . dh) (h_dh, a part a block of 64 values), which this kernel reads in
// dh's place (DeltaTcBackward::dk_s). Per chunk of n <= 64 rows, g_cum its local cumulative gate
// (per key for kda), q~ = scale q, gl = g_cum of its last row (rows past n zero, their gates
// flat), D_ij the decay from row j to row i <= 1 (j <= i; e^{g_cum_i - g_cum_j}, per key for kda,
// where "(M . D) y" is sum_j M_ij y_j . e^{g_cum_i - g_cum_j}), k< = k . e^{g_cum}:
//   dB    = dO v_new^T  (j <= i)
//   dq~_i = e^{g_cum_i} . (dO_i h^T) + sum_{j<i} dB_ij D_ij k_j      dq = scale (dq~ + dB_ii k)
//   dk_o  = sum_{i>j} dB_ij D_ij q~_i,  dk_s = e^{gl - g_cum} . (v_new dh^T)
//   dw    = -dv2 h^T
//   dA    = dv2 (Diag(beta) v)^T + dw (Diag(beta) k<)^T  (j < i)
//   dv    = Diag(beta) A^T dv2
//   dA0   = -(A^T dA A^T)  (j < i),  dX = Diag(beta) dA0,  X = (k k^T) . D  (j < i)
//   dk    = dk_o + dB_jj q~_j + dk_s + e^{g_cum} . Diag(beta) A^T dw + (dX . D) k
//           + (dX . D)^T k
//   dbeta = rowdot(A^T dv2, v) + rowdot(A^T dw, k<) + rowdot(dA0, X)
//   dG    = q~ . dq~ - k . (dk_o + dk_s) + k< . Diag(beta) A^T dw + k . (dX . D) k
//           - k . (dX . D)^T k (gated_delta_rule: summed over the keys); on the last row also
//           e^{gl} . rowsum(h . dh) + sum_j k_j . dk_s_j (gated_delta_rule: summed too)
//   dg    = dG's suffix sum inside the chunk (chunk_local_cumsum_reverse: g_cum is local).
// The terms of dB's diagonal cancel in dG and are left out of it, as in the reference.
// gated_delta_rule: every decay is one exp per (row, column), at most 1, on the C x C matrices
// (dB . D and dX . D in the input type). kda: X is never formed, rowdot(dA0, X) being k . P for
// P = (dA0 . D) k, and (dX . D) k = Diag(beta) P; the four products with per-key decays (dq~'s,
// dk_o, P and (dX . D)^T k) are split at 16-row sub-chunks against a reference row, as gla's
// backward splits its own (gpu/chunk_gla_bwd_tc.cu, whose header argues the bounds; helpers
// lower_decayed_product and upper_decayed_product of gpu/detail/gla_tc.cuh): every factor outside
// the products is at most 1, and the rows of the diagonal block whose factor could pass the input
// type's range are summed term by term in fp32 (lower_left_out, upper_left_out).
//
// chunk_delta_bwd_tc_kernel: grid (NC, H), 8 warps; warp w owns rows [16 (w % 4), +16) and half
// the columns (w / 4) of every C x K and C x V result, and the column tiles of parity w / 4 of the
// C x C ones (two warps a row block); each lane keeps its rows' partial sums of dbeta (and of
// gated_delta_rule's dG), added across the warps at the end in a fixed order, and kda's dG in
// its accumulators. Every operand of the chunk is copied into shared memory (cp.async) at the
// start, in three groups waited for one by one as the steps come to read them (the gates, beta,
// dO and v_new for dB; q, k, h and dh for dq~ and dk; dv2, v and A for the rest), so that the
// first products run while the rest arrive; once h and dh are read, their place holds dw and
// Diag(beta) k<, dO's holds Diag(beta) v and v_new's A^T dA; kda's dG is summed in the place of q
// and k at the end.
#include "detail/chunk_device.cuh" // at_k, chunk_rows, check, allow_shared_memory,
                                   // with_input_type, in, out, C
#include "detail/delta_launch.hpp"
// gla_tc.cuh: to, val, fast_exp, copy_rows_async, ChunkGates, copy_gates_async, sum_chunk_gates,
// rows_times, rows_times_transposed, transposed_times_rows, lower_rows_times_transposed,
// each_entry_of_side, store_rows, quad_sum, column_sum, warp_sum, plus_products8
#include "detail/gla_tc.cuh"
#include "detail/mma.cuh"

namespace ruleproof::gpu::detail {

namespace {

using namespace tc;

constexpr int BWD_THREADS = 256, BWD_WARPS = BWD_THREADS / 32;

template <class T, int K, int V, bool SCALAR> struct DeltaBwdShared {
  static constexpr int LK = K + PAD, LV = V + PAD, LC = C + PAD, LG = K + 4;
  // h and dh, then (once both are read) dw and Diag(beta) k<
  static constexpr int STATES = 2 * K * LV, WY = 2 * C * LK;
  T q[C][LK], k[C][LK]; // kda: at the end, dG [C][LG] in fp32
  T v[C][LV];
  T d_o[C][LV];   // then Diag(beta) v
  T v_new[C][LV]; // then A^T dA below the diagonal (C x LC)
  T dv2[C][LV];
  alignas(16) T states[STATES > WY ? STATES : WY];
  T a[C][LC]; // A = (I + A0)^-1
  T m[C][LC]; // dB (. D) below the diagonal, then dA, then dX . D (kda: dA0)
  float dB_diagonal[C], beta[C];
  float dbeta_rows[2][C];                // each half of the columns' sums, per row
  float dG_rows[2][SCALAR ? C : 1];      // likewise (gated_delta_rule)
  float last_row[BWD_WARPS][2];          // each warp's part of the last row's two terms
  float h_dh[SCALAR ? 1 : K];            // kda: sum_v h_cv dh_cv, per key
  float k_dk_s[SUB / 4][SCALAR ? 1 : K]; // kda: sum_j k_jc dk_s_jc of each row block
  ChunkGates<K, SCALAR> gates;
  static_assert(sizeof(float) * LG <= 2 * sizeof(T) * LK, "kda's dG fits in the place of q and k");
};

template <class In, int K, int V, bool SCALAR>
__global__ void __launch_bounds__(BWD_THREADS)
    chunk_delta_bwd_tc_kernel(const In *q, const In *k, const In *v, const float *g,
                              const float *beta, const In *d_o, DeltaTcBackward x, In *dq, In *dk,
                              In *dv, float *dbeta, float *dg, DeviceChunkTable t, ChunkDims d) {
  using S = DeltaBwdShared<In, K, V, SCALAR>;
  using Gates = ChunkGates<K, SCALAR>;
  constexpr int NK = K / 16, NV = V / 16; // n tiles of a warp's half of a row of K (of V)
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  S &s = *reinterpret_cast<S *>(shared_bytes);
  const int c = blockIdx.x, hd = blockIdx.y, tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const ChunkRows rows = chunk_rows(t, c);
  const int n = rows.n;
  const long row_at = static_cast<long>(rows.bos) * d.H + hd; // row bos of head hd
  const long state_at = (static_cast<long>(c) * d.H + hd) * K * V;
  const long stride_k = static_cast<long>(d.H) * K, stride_v = static_cast<long>(d.H) * V;
  In(*h)[S::LV] = reinterpret_cast<In(*)[S::LV]>(s.states);
  In(*dh)[S::LV] = h + K;
  // three groups of copies, in the order the steps read them, so that dB's product starts while
  // the rest arrive: the gates, beta, dO and v_new (dB); q, k, h and dh (dq~, dk_o, dk_s); dv2, v
  // and A (the rest)
  copy_gates_async<K, SCALAR>(s.gates, g, rows, hd, d);
  if (tid < C) // a row past n reads nothing
    mma::copy_async<4>(&s.beta[tid], beta + row_at + (tid < n ? static_cast<long>(tid) * d.H : 0),
                       tid >= n);
  copy_rows_async(&s.d_o[0][0], S::LV, d_o + row_at * V, stride_v, C, n, V);
  copy_rows_async(&s.v_new[0][0], S::LV, static_cast<const In *>(x.v_new) + row_at * V, stride_v, C,
                  n, V);
  mma::commit_copies();
  copy_rows_async(&s.q[0][0], S::LK, q + row_at * K, stride_k, C, n, K);
  copy_rows_async(&s.k[0][0], S::LK, k + row_at * K, stride_k, C, n, K);
  copy_rows_async(&h[0][0], S::LV, static_cast<const In *>(x.h) + state_at, V, K, K, V);
  if (x.dh) // (gated_delta_rule with dh's uses, TcStatePass::dk_s, reads them in its place)
    copy_rows_async(&dh[0][0], S::LV, static_cast<const In *>(x.dh) + state_at, V, K, K, V);
  mma::commit_copies();
  copy_rows_async(&s.dv2[0][0], S::LV, static_cast<const In *>(x.dv2) + row_at * V, stride_v, C, n,
                  V);
  copy_rows_async(&s.v[0][0], S::LV, v + row_at * V, stride_v, C, n, V);
  copy_rows_async(&s.a[0][0], S::LC, static_cast<const In *>(x.A) + row_at * C,
                  static_cast<long>(d.H) * C, C, n, C);
  mma::commit_copies();
  mma::wait_copies_but<2>();                                 // the gates, beta, dO and v_new
  sum_chunk_gates<K, SCALAR>(s.gates, rows, hd, d, nullptr); // synchronises first and last
  const float(*g_cum)[Gates::LG] = s.gates.g;
  const float *up = s.gates.row_up,
              *to_end = s.gates.row_to_end; // scalar: e^{g_cum}, e^{gl - g_cum}
  const float scale = d.scale;
  const int row0 = SUB * (warp % 4), side = warp / 4;
  const int kcol0 = K / 2 * side, vcol0 = V / 2 * side;
  const auto identity = [](int, int, float y) { return y; };
  // kda: the diagonal block's rows whose factored decay could overflow, summed term by term: a
  // suffix against the block's first row (the products of lower_decayed_product), a prefix against
  // its last (upper_decayed_product)
  unsigned suffix = 0, prefix = 0;
  float left_out[SCALAR ? 1 : NK * 4]; // kda: the terms a product left out (lower_left_out)

  // this lane's parts of dbeta (and, for a scalar gate, of dG) of its rows row0 + lane / 4 (u = 0)
  // and + 8 (u = 1), and of the last row's sum_j k_j . dk_s_j; dk (and kda's dG) summed over the
  // steps in the warp's accumulators
  float dG_part[2] = {0, 0}, dbeta_part[2] = {0, 0}, k_dk_s = 0;
  mma::Acc dk_acc[NK], dG_acc[SCALAR ? 1 : NK];
  // dG's entry e of tile nt, the row's part for a scalar gate
  const auto add_dG = [&](int nt, int e, float y) {
    if constexpr (SCALAR)
      dG_part[e / 2] += y;
    else
      dG_acc[nt].x[e] += y;
  };

  // -- dB = dO v_new^T: its diagonal in fp32, dB (. D) below it in the input type
  {
    mma::Acc acc[C / 8];
    lower_rows_times_transposed(acc, &s.d_o[0][0], S::LV, row0, &s.v_new[0][0], S::LV, side, V);
    const SideGates side_g = side_gates(g_cum, row0, side);
    each_place_of_side(row0, side, [&](int nt, int e, int i, int j) {
      const float y = acc[nt].x[e];
      if (j == i)
        s.dB_diagonal[i] = y;
      s.m[i][j] = to<In>(j < i ? (SCALAR ? y * side_g.decay(nt, e) : y) : 0.0f);
    });
  }
  mma::wait_copies_but<1>(); // q, k, h and dh
  __syncthreads();
  if constexpr (!SCALAR) {
    // the factors scaled up: k against the first row; q, and k beta, against the last
    const float k_size = factor_magnitude<In, K>(&s.k[0][0], S::LK, row0);
    suffix = wide_rows<In, K>(g_cum, row0, row0, 1.0f, k_size);
    prefix = wide_rows<In, K>(g_cum, row0, row0 + SUB - 1, -1.0f,
                              fmaxf(factor_magnitude<In, K>(&s.q[0][0], S::LK, row0),
                                    factor_magnitude<In, K>(&s.k[0][0], S::LK, row0, s.beta)));
  }

  // -- dq~ = e^{g_cum} . (dO h^T) + sum_{j<i} dB_ij k_j . e^{g_cum_i - g_cum_j};
  //    dq = scale (dq~ + dB_ii k_i)
  {
    mma::Acc state[NK], scores[NK];
    rows_times_transposed(state, &s.d_o[0][0], S::LV, row0, &h[0][0], S::LV, kcol0, V);
    if constexpr (SCALAR)
      rows_times(scores, &s.m[0][0], S::LC, row0, &s.k[0][0], S::LK, kcol0, row0 + SUB);
    else {
      lower_decayed_product(scores, &s.m[0][0], S::LC, &s.k[0][0], S::LK, g_cum, row0, kcol0,
                            suffix);
      if (suffix)
        lower_left_out(left_out, &s.m[0][0], S::LC, &s.k[0][0], S::LK, g_cum, row0, kcol0, suffix);
    }
#pragma unroll
    for (int nt = 0; nt < NK; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int i = row0 + mma::acc_row(e), col = kcol0 + nt * 8 + mma::acc_col(e);
        const float dq_t = (SCALAR ? up[i] : fast_exp(g_cum[i][col])) * state[nt].x[e] +
                           (SCALAR ? scores[nt].x[e]
                                   : lower_decayed_entry(scores[nt].x[e], g_cum, row0, i, col,
                                                         suffix, left_out, 4 * nt + e));
        if constexpr (SCALAR)
          dG_part[e / 2] += scale * val(s.q[i][col]) * dq_t;
        else
          dG_acc[nt].x[e] = scale * val(s.q[i][col]) * dq_t;
        state[nt].x[e] = scale * (dq_t + s.dB_diagonal[i] * val(s.k[i][col]));
      }
    store_rows(dq, state, row0, kcol0, n, row_at * K, stride_k, identity);
  }

  // -- dk_o = sum_{i>j} dB_ij q~_i . e^{g_cum_i - g_cum_j}, dk_s = e^{gl - g_cum} . (v_new dh^T):
  //    dk = dk_o + dB_jj q~_j + dk_s
  {
    mma::Acc scores[NK];
    if (SCALAR && x.dk_s) { // v_new dh^T as the sequential kernel summed it
#pragma unroll
      for (int nt = 0; nt < NK; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int j = row0 + mma::acc_row(e), col = kcol0 + nt * 8 + mma::acc_col(e);
          dk_acc[nt].x[e] = j < n ? x.dk_s[(row_at + static_cast<long>(j) * d.H) * K + col] : 0.0f;
        }
    } else {
      rows_times_transposed(dk_acc, &s.v_new[0][0], S::LV, row0, &dh[0][0], S::LV, kcol0, V);
    }
    if constexpr (SCALAR)
      transposed_times_rows(scores, &s.m[0][0], S::LC, row0, &s.q[0][0], S::LK, kcol0, row0, C);
    else {
      upper_decayed_product(scores, &s.m[0][0], S::LC, &s.q[0][0], S::LK, g_cum, row0, kcol0,
                            prefix, row0 + SUB - 1);
      if (prefix)
        upper_left_out(left_out, &s.m[0][0], S::LC, &s.q[0][0], S::LK, g_cum, row0, kcol0, prefix);
    }
    float column[NK][2] = {}; // kda: this lane's part of sum_j k_j . dk_s_j of its columns
#pragma unroll
    for (int nt = 0; nt < NK; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int j = row0 + mma::acc_row(e), col = kcol0 + nt * 8 + mma::acc_col(e);
        const float kj = val(s.k[j][col]), q_tj = scale * val(s.q[j][col]);
        const float to_end_j = SCALAR ? to_end[j] : fast_exp(g_cum[C - 1][col] - g_cum[j][col]);
        const float dk_s = to_end_j * dk_acc[nt].x[e];
        const float dk_o =
            scale * (SCALAR ? scores[nt].x[e]
                            : upper_decayed_entry(scores[nt].x[e], g_cum, row0, j, col, prefix,
                                                  left_out, 4 * nt + e));
        add_dG(nt, e, -kj * (dk_o + dk_s));
        if constexpr (SCALAR)
          k_dk_s += kj * dk_s;
        else
          column[nt][e % 2] += kj * dk_s;
        dk_acc[nt].x[e] = dk_o + s.dB_diagonal[j] * q_tj + dk_s;
      }
    if constexpr (!SCALAR)
#pragma unroll
      for (int nt = 0; nt < NK; ++nt)
#pragma unroll
        for (int u = 0; u < 2; ++u) {
          const float sum = column_sum(column[nt][u]);
          if (lane < 4)
            s.k_dk_s[warp % 4][kcol0 + nt * 8 + 2 * lane + u] = sum;
        }
  }

  // -- dw = -dv2 h^T, and sum(h . dh) (kda: per key), before h and dh give their place to dw
  mma::wait_copies(); // dv2, v and A
  __syncthreads();
  mma::Acc dw_acc[NK];
  rows_times_transposed(dw_acc, &s.dv2[0][0], S::LV, row0, &h[0][0], S::LV, kcol0, V);
  if constexpr (SCALAR) {
    float h_dh = 0;
    if (x.dk_s) { // the sequential kernel's parts, a block of 64 values each, in their order
      if (tid == 0)
        for (int z = 0; z < V / TC_BV; ++z)
          h_dh += x.h_dh[(static_cast<long>(c) * d.H + hd) * (V / TC_BV) + z];
    } else {
      for (int e = tid; e < K * (V / 8); e += BWD_THREADS) { // 8 entries a load
        const int key = e / (V / 8), col0 = (e % (V / 8)) * 8;
        h_dh = plus_products8(h_dh, &h[key][col0], &dh[key][col0]);
      }
      h_dh = warp_sum(h_dh);
    }
    if (lane == 0)
      s.last_row[warp][0] = h_dh;
  } else {
    for (int key = warp; key < K; key += BWD_WARPS) {
      float sum = 0;
      for (int col = lane; col < V; col += 32)
        sum += val(h[key][col]) * val(dh[key][col]);
      sum = warp_sum(sum);
      if (lane == 0)
        s.h_dh[key] = sum;
    }
  }
  __syncthreads(); // every warp is done with h, dh, d_o, v_new and dB
  In(*dw)[S::LK] = reinterpret_cast<In(*)[S::LK]>(s.states);
  In(*bk)[S::LK] = dw + C;                                     // Diag(beta) k<
  In(*bv)[S::LV] = s.d_o;                                      // Diag(beta) v
  In(*at_da)[S::LC] = reinterpret_cast<In(*)[S::LC]>(s.v_new); // A^T dA
#pragma unroll
  for (int nt = 0; nt < NK; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      dw[row0 + mma::acc_row(e)][kcol0 + nt * 8 + mma::acc_col(e)] = to<In>(-dw_acc[nt].x[e]);
  map_rows<In, K>(&bk[0][0], S::LK, &s.k[0][0], S::LK, C, [&](int i, int col, float k_ic) {
    return s.beta[i] * (k_ic * (SCALAR ? up[i] : fast_exp(g_cum[i][col])));
  });
  map_rows<In, V>(&bv[0][0], S::LV, &s.v[0][0], S::LV, C,
                  [&](int i, int, float v_ic) { return s.beta[i] * v_ic; });
  __syncthreads();

  // -- dA = dv2 (Diag(beta) v)^T + dw (Diag(beta) k<)^T below the diagonal, in the input type
  {
    mma::Acc acc[C / 8];
    lower_rows_times_transposed(acc, &s.dv2[0][0], S::LV, row0, &bv[0][0], S::LV, side, V);
    lower_rows_times_transposed(acc, &dw[0][0], S::LK, row0, &bk[0][0], S::LK, side, K);
    each_entry_of_side(acc, row0, side,
                       [&](int i, int j, float y) { s.m[i][j] = to<In>(j < i ? y : 0.0f); });
  }

  // -- dv = Diag(beta) A^T dv2; dbeta's rowdot(A^T dv2, v)
  {
    mma::Acc acc[NV];
    transposed_times_rows(acc, &s.a[0][0], S::LC, row0, &s.dv2[0][0], S::LV, vcol0, row0, C);
#pragma unroll
    for (int nt = 0; nt < NV; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int j = row0 + mma::acc_row(e), col = vcol0 + nt * 8 + mma::acc_col(e);
        dbeta_part[e / 2] += acc[nt].x[e] * val(s.v[j][col]);
        acc[nt].x[e] *= s.beta[j];
      }
    store_rows(dv, acc, row0, vcol0, n, row_at * V, stride_v, identity);
  }

  // -- A^T dw: dk's e^{g_cum} . Diag(beta) A^T dw, its rowdot with k< in dbeta and (times beta)
  //    in dG
  {
    mma::Acc acc[NK];
    transposed_times_rows(acc, &s.a[0][0], S::LC, row0, &dw[0][0], S::LK, kcol0, row0, C);
#pragma unroll
    for (int nt = 0; nt < NK; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int j = row0 + mma::acc_row(e), col = kcol0 + nt * 8 + mma::acc_col(e);
        const float up_j = SCALAR ? up[j] : fast_exp(g_cum[j][col]);
        const float at_dw = acc[nt].x[e], k_up = val(s.k[j][col]) * up_j;
        dbeta_part[e / 2] += at_dw * k_up;
        add_dG(nt, e, s.beta[j] * at_dw * k_up);
        dk_acc[nt].x[e] += up_j * s.beta[j] * at_dw;
      }
  }
  __syncthreads(); // dA is in

  // -- A^T dA below the diagonal (all dA0 reads of it), in the input type
  {
    mma::Acc acc[C / 16];
    transposed_times_rows(acc, &s.a[0][0], S::LC, row0, &s.m[0][0], S::LC, C / 2 * side, row0, C);
#pragma unroll
    for (int nt = 0; nt < C / 16; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int i = row0 + mma::acc_row(e), l = C / 2 * side + nt * 8 + mma::acc_col(e);
        at_da[i][l] = to<In>(l < i ? acc[nt].x[e] : 0.0f);
      }
  }
  __syncthreads(); // every warp is done with dA

  // -- dA0 = -(A^T dA) A^T below the diagonal. gated_delta_rule: with X = (k k^T) . D, dbeta's
  //    rowdot(dA0, X) in fp32 and dX . D = Diag(beta) dA0 . D in the input type; kda: dA0 in the
  //    input type (X's factored products follow)
  {
    mma::Acc acc[C / 8], kk[SCALAR ? C / 8 : 1];
    lower_rows_times_transposed(acc, &at_da[0][0], S::LC, row0, &s.a[0][0], S::LC, side, C);
    if constexpr (SCALAR)
      lower_rows_times_transposed(kk, &s.k[0][0], S::LK, row0, &s.k[0][0], S::LK, side, K);
    [[maybe_unused]] const SideGates side_g = side_gates(g_cum, row0, side); // scalar gate
    [[maybe_unused]] const float beta_row[2] = {s.beta[row0 + mma::acc_row(0)],
                                                s.beta[row0 + mma::acc_row(2)]};
    each_place_of_side(row0, side, [&](int nt, int e, int i, int j) {
      const float dA0 = j < i ? -acc[nt].x[e] : 0.0f;
      if constexpr (SCALAR) {
        const float decay = j < i ? side_g.decay(nt, e) : 0.0f;
        dbeta_part[e / 2] += dA0 * kk[nt].x[e] * decay;
#ifdef RULEPROOF_PLANTED_BUG // gpu_check_planted only: a deliberate bug, dX without beta
        s.m[i][j] = to<In>(dA0 * decay);
#else
        s.m[i][j] = to<In>(beta_row[e / 2] * dA0 * decay);
#endif
      } else {
        s.m[i][j] = to<In>(dA0);
      }
    });
  }
  __syncthreads();

  // -- dk's (dX . D) k + (dX . D)^T k, and their rowdots with k in dG; kda also dbeta's
  //    rowdot(dA0, X) = k . P for P = (dA0 . D) k, with (dX . D) k = Diag(beta) P; dk out
  {
    mma::Acc left[NK], right[NK];
    if constexpr (SCALAR) {
      rows_times(left, &s.m[0][0], S::LC, row0, &s.k[0][0], S::LK, kcol0, row0 + SUB);
      transposed_times_rows(right, &s.m[0][0], S::LC, row0, &s.k[0][0], S::LK, kcol0, row0, C);
    } else {
#ifdef RULEPROOF_PLANTED_BUG // gpu_check_planted only: a deliberate bug, dX without beta
      const float *beta_i = nullptr;
#else
      const float *beta_i = s.beta;
#endif
      lower_decayed_product(left, &s.m[0][0], S::LC, &s.k[0][0], S::LK, g_cum, row0, kcol0, suffix);
      if (suffix)
        lower_left_out(left_out, &s.m[0][0], S::LC, &s.k[0][0], S::LK, g_cum, row0, kcol0, suffix);
#pragma unroll
      for (int nt = 0; nt < NK; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int i = row0 + mma::acc_row(e), col = kcol0 + nt * 8 + mma::acc_col(e);
          const float p =
              lower_decayed_entry(left[nt].x[e], g_cum, row0, i, col, suffix, left_out, 4 * nt + e);
          dbeta_part[e / 2] += val(s.k[i][col]) * p;
          left[nt].x[e] = (beta_i ? beta_i[i] : 1.0f) * p;
        }
      upper_decayed_product(right, &s.m[0][0], S::LC, &s.k[0][0], S::LK, g_cum, row0, kcol0, prefix,
                            row0 + SUB - 1, beta_i);
      if (prefix)
        upper_left_out(left_out, &s.m[0][0], S::LC, &s.k[0][0], S::LK, g_cum, row0, kcol0, prefix,
                       beta_i);
#pragma unroll
      for (int nt = 0; nt < NK; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int j = row0 + mma::acc_row(e), col = kcol0 + nt * 8 + mma::acc_col(e);
          right[nt].x[e] = upper_decayed_entry(right[nt].x[e], g_cum, row0, j, col, prefix,
                                               left_out, 4 * nt + e);
        }
    }
#pragma unroll
    for (int nt = 0; nt < NK; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int j = row0 + mma::acc_row(e), col = kcol0 + nt * 8 + mma::acc_col(e);
        add_dG(nt, e, val(s.k[j][col]) * (left[nt].x[e] - right[nt].x[e]));
        dk_acc[nt].x[e] += left[nt].x[e] + right[nt].x[e];
      }
    store_rows(dk, dk_acc, row0, kcol0, n, row_at * K, stride_k, identity);
  }

  // -- dbeta: each row's two halves
#pragma unroll
  for (int u = 0; u < 2; ++u) {
    const float dbeta_u = quad_sum(dbeta_part[u]);
    if (lane % 4 == 0)
      s.dbeta_rows[side][row0 + lane / 4 + 8 * u] = dbeta_u;
  }
  if constexpr (SCALAR) { // dG: each row's two halves and the last row's terms
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      const float dG_u = quad_sum(dG_part[u]);
      if (lane % 4 == 0)
        s.dG_rows[side][row0 + lane / 4 + 8 * u] = dG_u;
    }
    k_dk_s = warp_sum(k_dk_s);
    if (lane == 0)
      s.last_row[warp][1] = k_dk_s;
  }
  __syncthreads(); // kda: every warp is done with q and k
  if (tid < n)
    dbeta[row_at + static_cast<long>(tid) * d.H] = s.dbeta_rows[0][tid] + s.dbeta_rows[1][tid];
  if constexpr (SCALAR) {
    if (tid < C) {
      float dG_i = s.dG_rows[0][tid] + s.dG_rows[1][tid];
      if (tid == n - 1) {
        float sum_h_dh = 0, sum_k_dk_s = 0;
        for (int w = 0; w < BWD_WARPS; ++w) {
          sum_h_dh += s.last_row[w][0];
          sum_k_dk_s += s.last_row[w][1];
        }
        dG_i += up[n - 1] * sum_h_dh + sum_k_dk_s;
      }
      s.dG_rows[0][tid] = dG_i;
    }
    __syncthreads();
    if (tid < n) { // dg_i = sum_{m >= i} dG_m, from the last row up
      float sum = 0;
      for (int m = n - 1; m >= tid; --m)
        sum += s.dG_rows[0][m];
      dg[row_at + static_cast<long>(tid) * d.H] = sum;
    }
  } else { // kda: dG [C][K] in the place of q and k, then each key's suffix sums
    float(*dG)[S::LG] = reinterpret_cast<float(*)[S::LG]>(&s.q[0][0]);
#pragma unroll
    for (int nt = 0; nt < NK; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        dG[row0 + mma::acc_row(e)][kcol0 + nt * 8 + mma::acc_col(e)] = dG_acc[nt].x[e];
    __syncthreads();
    if (tid < K && n > 0) { // dg_ic = sum_{m >= i} dG_mc, the last row's terms at m = n - 1
      float sum = expf(g_cum[n - 1][tid]) * s.h_dh[tid];
      for (int b = 0; b < SUB / 4; ++b)
        sum += s.k_dk_s[b][tid];
      for (int m = n - 1; m >= 0; --m) {
        sum += dG[m][tid];
        dg[(row_at + static_cast<long>(m) * d.H) * K + tid] = sum;
      }
    }
  }
}

template <class In, int K, int V, bool SCALAR>
void launch_bwd(const void *q, const void *k, const void *v, const float *g, const float *beta,
                const void *d_o, const DeltaTcBackward &x, void *dq, void *dk, void *dv,
                float *dbeta, float *dg, const DeviceChunkTable &t, const ChunkDims &d) {
  static_assert(sizeof(DeltaBwdShared<In, K, V, SCALAR>) <= max_shared_bytes);
  const int bytes = static_cast<int>(sizeof(DeltaBwdShared<In, K, V, SCALAR>));
  auto *kernel = chunk_delta_bwd_tc_kernel<In, K, V, SCALAR>;
  allow_shared_memory(kernel, bytes, "chunk_delta_bwd_tc_kernel");
  kernel<<<dim3(t.NC, d.H), BWD_THREADS, bytes>>>(in<In>(q), in<In>(k), in<In>(v), g, beta,
                                                  in<In>(d_o), x, out<In>(dq), out<In>(dk),
                                                  out<In>(dv), dbeta, dg, t, d);
}

} // namespace

void launch_chunk_delta_bwd_tc(const void *q, const void *k, const void *v, const float *g,
                               const float *beta, const void *d_o, const DeltaTcBackward &x,
                               void *dq, void *dk, void *dv, float *dbeta, float *dg,
                               const DeviceChunkTable &t, const ChunkDims &d) {
  if (t.NC == 0)
    return;
  with_input_type(d, [&](auto y) {
    using In = decltype(y);
    const auto run = [&](auto launch) {
      launch(q, k, v, g, beta, d_o, x, dq, dk, dv, dbeta, dg, t, d);
    };
    const auto run_v = [&](auto k_size, auto scalar) {
      constexpr int K = decltype(k_size)::value;
      constexpr bool SCALAR = decltype(scalar)::value;
      d.V == 64 ? run(launch_bwd<In, K, 64, SCALAR>) : run(launch_bwd<In, K, 128, SCALAR>);
    };
    using K64 = std::integral_constant<int, 64>;
    using K128 = std::integral_constant<int, 128>;
    if (d.G == 1)
      d.K == 64 ? run_v(K64{}, std::true_type{}) : run_v(K128{}, std::true_type{});
    else
      d.K == 64 ? run_v(K64{}, std::false_type{}) : run_v(K128{}, std::false_type{});
  });
  check("chunk_delta_bwd_tc_kernel");
}

} // namespace ruleproof::gpu::detail
