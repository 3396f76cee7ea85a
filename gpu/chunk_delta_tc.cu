// ruleproof: the chunkwise delta rules' forward on tensor cores (gated_delta_rule: scalar gate;
// kda: per-key gate), Hopper (sm_90). The path KernelPath::tensor_cores of chunk_delta_fwd
// (gpu/chunk_delta.hpp); the CUDA-core path is gpu/chunk_delta.cu. Every matrix product runs as
// mma.sync m16n8k16 with operands in the input type (bf16 or fp16) and fp32 sums
// (gpu/detail/mma.cuh); gates, beta, the triangular solve and the running state stay fp32. Judged
// under the tensor-core policy (gpu/twin.hpp).
//
// CPU reference, one grep away: reference/kda/chunk.hpp (chunk_wy_fwd: chunk_scaled_dot_kkt,
// solve_tril, recompute_w_u; chunk_delta_fwd_h; chunk_fwd_o), seed 003's forward steps 1-5;
// gated_delta_rule is kda with its gate repeated over the keys (reference/kda/variant.hpp).
//
// Two kernels. Per chunk of n <= 64 rows, g_cum its local cumulative gate, q~ = scale q, gl =
// g_cum of row n - 1 (rows past n zero, their gates flat), D_ijc = e^{g_cum_ic - g_cum_jc}:
//   Aqk_ij = sum_c q~_ic k_jc D_ijc  (j <= i)
//   A0_ij  = beta_i sum_c k_ic k_jc D_ijc  (j < i)        A = (I + A0)^-1
//   w = A Diag(beta) (k . e^{g_cum})    u = A Diag(beta) v    v_new = u - w h
//   o = (q~ . e^{g_cum}) h + Aqk v_new    h' = Diag(e^{gl}) h + (k . e^{gl - g_cum})^T v_new
// chunk_delta_wy_tc_kernel: grid (NC, H), 8 warps, two blocks an SM, every chunk at once: g_cum,
// Aqk and A0, A by 16-row blocks in fp32 (each diagonal block by forward substitution, then A_IJ
// = -A_II sum_{J <= M < I} A0_IM A_MJ, one block diagonal at a time, in the place of the gates),
// w and u on tensor cores, and the factors qd = q~ . e^{g_cum}, kd = k . e^{gl - g_cum}; Aqk, A,
// w, u, qd, kd stored in the input type (the operands of the products that read them), e^{gl} in
// fp32. A scalar gate's Aqk and A0 take one exp per (row, column) on the tensor-core products q~
// k^T and k k^T. kda's per-key decays are split at 16-row sub-chunks against each sub-chunk's
// first row r, as gla's scores are (factored_scores and pairwise_scores, gpu/detail/gla_tc.cuh;
// gpu/chunk_gla_tc.cu's header argues the bound): left factors q~_ic e^{g_cum_ic - g_cum_rc} and
// k_ic e^{g_cum_ic - g_cum_rc} (at most |q~|, |k|), right factor k_jc e^{g_cum_rc - g_cum_jc} (at
// most |k| below the diagonal block, e^{spread} |k| inside it), all built in registers, the right
// factor once for both products; the diagonal block's rows whose spread passes spread_limit are
// summed term by term in fp32; the delta rules' keys are rows of norm at most 1. A scalar gate
// takes chunk_delta_wy_lean_tc_kernel by default: the same values bit for bit in 72 KB at K = V =
// 128, three blocks an SM (RULEPROOF_WY_KERNEL=two takes the kernel above).
// The backward, given the forward's Aqk and A (DeltaSaved, gpu/chunk_delta.hpp), runs
// chunk_delta_wy_from_a_tc_kernel in the WY kernel's place: qd, kd (a scalar gate's: the row
// factors, and q is not read), w and u from A, as the WY kernel makes them (recompute_w_u alone),
// bit for bit; given A alone (gated_oja's forward keeps
// no Aqk), it makes Aqk too, as the WY kernel does, without A0 and the solve.
// Then chunk_gla_state_tc (gpu/chunk_gla_tc.cu) with w: the state in mma accumulators, v_new,
// the output and the state update fused at each chunk (kda: the decay per key). A scalar gate's
// forward stores each row's e^{g_cum} and e^{gl - g_cum} (DeltaTcScratch::row_up) in place of qd
// and kd, and the sequential kernel scales by them.
#include <cstdlib>
#include <string_view>
#include <type_traits>

#include "detail/chunk_device.cuh" // at_k, at_v, at_score, chunk_rows, check,
                                   // allow_shared_memory, with_sizes, in, out, C
#include "detail/delta_launch.hpp"
#include "detail/gla_tc.cuh" // to, val, fast_exp, copy_rows_async, ChunkGates, copy_gates_async, sum_chunk_gates,
                             // store_decayed_factors, factored_scores, pairwise_scores,
                             // wide_rows, rows_times, store_rows, unit_lower_inverse, a_times,
                             // store_scores, PAD, SUB
#include "detail/mma.cuh"

namespace ruleproof::gpu::detail {

namespace {

using namespace tc;

constexpr int WY_THREADS = 256;

template <class T, int K, int V, bool SCALAR> struct WyShared {
  static constexpr int LK = K + PAD, LV = V + PAD, LC = C + PAD, LF = C + 1;
  T q[C][LK]; // q, then beta k e^{g_cum}: w's right factor
  T k[C][LK];
  T v[C][LV];      // v, then beta v: u's right factor
  T a16[C][LC];    // Aqk, then A, in the input type: the left factor of w and u
  float a0[C][LF]; // A0
  float beta[C];
  // the gates until w's right factor is made, then A in fp32 and the solve's partial sums (one
  // block diagonal): kda's chunk fits twice in an SM's shared memory
  union {
    ChunkGates<K, SCALAR> gates;
    LowerInverse solve;
  };
};

/// The start of both WY kernels: chunk `rows`' q, k and v copied into the tiles at q_to, k_to and
/// v_to (LK, LV values a row; rows past n zero), beta into beta_to, and the chunk's gates made.
/// Three groups of copies: the gates and beta (with any copy the caller left open), then q and k,
/// then v; the gates are summed while q and k arrive. Without READ_Q q's tile is left as it is
/// (nothing reads it). Called by the whole block; ends synchronised with q and k in, while v's
/// copy may still be on its way (the scores do not read it): mma::wait_copies() before the
/// barrier past which v is read.
template <class In, int K, int V, bool SCALAR, bool READ_Q = true, bool READ_V = true, bool COMPACT>
__device__ void load_wy_chunk(In *q_to, In *k_to, In *v_to, int LK, int LV, float *beta_to,
                              ChunkGates<K, COMPACT> &gates, const In *q, const In *k, const In *v,
                              const float *g, const float *beta, ChunkRows rows, int hd,
                              const ChunkDims &d, float *g_cum_out) {
  const int n = rows.n, tid = threadIdx.x;
  const long row_at = static_cast<long>(rows.bos) * d.H + hd; // row bos of head hd
  copy_gates_async<K, SCALAR>(gates, g, rows, hd, d);
  if (tid < C) // a row past n reads nothing
    mma::copy_async<4>(&beta_to[tid], beta + row_at + (tid < n ? static_cast<long>(tid) * d.H : 0),
                       tid >= n);
  mma::commit_copies();
  if constexpr (READ_Q)
    copy_rows_async(q_to, LK, q + row_at * K, static_cast<long>(d.H) * K, C, n, K);
  copy_rows_async(k_to, LK, k + row_at * K, static_cast<long>(d.H) * K, C, n, K);
  mma::commit_copies();
  if constexpr (READ_V)
    copy_rows_async(v_to, LV, v + row_at * V, static_cast<long>(d.H) * V, C, n, V);
  mma::commit_copies();
  mma::wait_copies_but<2>(); // the gates and beta
  sum_chunk_gates<K, SCALAR>(gates, rows, hd, d, g_cum_out);
  mma::wait_copies_but_last(); // q and k
  __syncthreads();
}

template <class In, int K, int V, bool SCALAR>
__global__ void __launch_bounds__(WY_THREADS, 2)
    chunk_delta_wy_tc_kernel(const In *q, const In *k, const In *v, const float *g,
                             const float *beta, DeltaTcScratch x, DeltaTcStages st,
                             DeviceChunkTable t, ChunkDims d) {
  using S = WyShared<In, K, V, SCALAR>;
  constexpr int LG = ChunkGates<K, SCALAR>::LG;
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  S &s = *reinterpret_cast<S *>(shared_bytes);
  const int c = blockIdx.x, hd = blockIdx.y, tid = threadIdx.x, warp = tid / 32;
  const ChunkRows rows = chunk_rows(t, c);
  const int n = rows.n;
  const long row_at = static_cast<long>(rows.bos) * d.H + hd; // row bos of head hd
  load_wy_chunk<In, K, V, SCALAR>(&s.q[0][0], &s.k[0][0], &s.v[0][0], S::LK, S::LV, s.beta, s.gates,
                                  q, k, v, g, beta, rows, hd, d, st.g_cum);
  const float(*g_cum)[LG] = s.gates.g;
  // e^{g_cum} of row i, key col
  const auto up = [&](int i, int col) {
    return SCALAR ? s.gates.row_up[i] : fast_exp(g_cum[i][col]);
  };

  store_decayed_factors<In, K, SCALAR>(&s.q[0][0], &s.k[0][0], S::LK, s.gates, rows, c, hd, d,
                                       static_cast<In *>(x.qd), static_cast<In *>(x.kd), x.decay);
  if constexpr (SCALAR)
    store_row_factors(s.gates, rows, hd, d, x.row_up, x.row_to_end);

  // -- Aqk = (q~ k^T) . D and A0 = Diag(beta) (k k^T) . D: warp w, rows [16 (w % 4), +16),
  //    the column tiles of parity w / 4 up to the diagonal
  const int row0 = SUB * (warp % 4), side = warp / 4;
  if constexpr (SCALAR) { // one exp per (row, column) on the plain products
    mma::Acc qk[C / 8], kk[C / 8];
    lower_rows_times_transposed(qk, &s.q[0][0], S::LK, row0, &s.k[0][0], S::LK, side, K);
    lower_rows_times_transposed(kk, &s.k[0][0], S::LK, row0, &s.k[0][0], S::LK, side, K);
    each_entry_of_side(qk, row0, side, [&](int i, int j, float y) {
      s.a16[i][j] = to<In>(j <= i ? y * d.scale * fast_exp(g_cum[i][0] - g_cum[j][0]) : 0.0f);
    });
    each_entry_of_side(kk, row0, side, [&](int i, int j, float y) {
      s.a0[i][j] = j < i ? s.beta[i] * y * fast_exp(g_cum[i][0] - g_cum[j][0]) : 0.0f;
    });
  } else { // per key: factored against each sub-chunk's first row, as gla's scores are
    const unsigned pairwise_rows =
        wide_rows<In, K>(g_cum, row0, row0, 1.0f, factor_magnitude<In, K>(&s.k[0][0], S::LK, row0));
    const auto take_a0 = [&](const mma::Acc(&acc)[C / 8]) {
      each_entry_of_side(acc, row0, side,
                         [&](int i, int j, float y) { s.a0[i][j] = j < i ? s.beta[i] * y : 0.0f; });
    };
    if (x.Aqk) {
      mma::Acc acc[2][C / 8]; // Aqk, A0 / beta
      const In *const left[2] = {&s.q[0][0], &s.k[0][0]};
      const float left_scale[2] = {d.scale, 1.0f};
      factored_scores(acc, left, left_scale, &s.k[0][0], S::LK, g_cum, row0, side, pairwise_rows,
                      row0, K);
      each_entry_of_side(acc[0], row0, side,
                         [&](int i, int j, float y) { s.a16[i][j] = to<In>(j <= i ? y : 0.0f); });
      take_a0(acc[1]);
    } else { // the states alone (gated_oja's forward): no Aqk
      mma::Acc acc[1][C / 8];
      const In *const left[1] = {&s.k[0][0]};
      const float left_scale[1] = {1.0f};
      factored_scores(acc, left, left_scale, &s.k[0][0], S::LK, g_cum, row0, side, pairwise_rows,
                      row0, K);
      take_a0(acc[0]);
    }
    __syncthreads(); // the factored entries are in; the block's pairwise rows replace them
    if (pairwise_rows && side == 0) {
      if (x.Aqk)
        pairwise_scores<In, K>(&s.q[0][0], &s.k[0][0], S::LK, g_cum, row0, pairwise_rows, d.scale,
                               [&](int i, int j, float y) { s.a16[i][j] = to<In>(y); });
      pairwise_scores<In, K>(&s.k[0][0], &s.k[0][0], S::LK, g_cum, row0, pairwise_rows, 1.0f,
                             [&](int i, int j, float y) {
                               if (j < i)
                                 s.a0[i][j] = s.beta[i] * y;
                             });
    }
  }
  mma::wait_copies(); // v's copy, read past this barrier
  __syncthreads();
  if (x.Aqk)
    store_scores(static_cast<In *>(x.Aqk), s.a16, rows, hd, d);
  if (st.A0)
    for (int e = tid; e < n * C; e += WY_THREADS)
      st.A0[at_score(rows.bos + e / C, hd, e % C, d)] = s.a0[e / C][e % C];
  // the right factors of w and u, in place of q (read by now) and v
  map_rows<In, K>(&s.q[0][0], S::LK, &s.k[0][0], S::LK, C,
                  [&](int i, int col, float y) { return s.beta[i] * y * up(i, col); });
  map_rows<In, V>(&s.v[0][0], S::LV, &s.v[0][0], S::LV, C,
                  [&](int i, int, float y) { return s.beta[i] * y; });

  // -- A = (I + A0)^-1, and in the input type (its rows past n are zero: A0's are)
  __syncthreads(); // Aqk's copy is out of s.a16; the gates' place is free for the solve
  unit_lower_inverse(s.a0, s.solve, [&](int i, int j, float y) {
    s.a16[i][j] = to<In>(y);
    if (st.A && i < n)
      st.A[at_score(rows.bos + i, hd, j, d)] = val(s.a16[i][j]);
  });
  if (x.A)
    store_scores(static_cast<In *>(x.A), s.a16, rows, hd, d);

  // -- w = A (beta k e^{g_cum}), u = A (beta v) on the warp's rows and half the columns
  a_times<In, K>(&s.a16[0][0], S::LC, &s.q[0][0], S::LK, row0, side, rows, row_at, d.H,
                 static_cast<In *>(x.w), st.w);
  a_times<In, V>(&s.a16[0][0], S::LC, &s.v[0][0], S::LV, row0, side, rows, row_at, d.H,
                 static_cast<In *>(x.u), st.u);
}

/// Entries (i, j0..j0 + 3) of A in the input type from unit_lower_inverse's fp32 result, zeros
/// above its diagonal blocks (whose place the solve does not write), packed in 8 bytes: one
/// 16-byte load (a quarter warp's four-entry pieces of a row, one 128-byte wavefront).
template <class In> __device__ inline uint2 solved_quad(const LowerInverse &s, int i, int j0) {
  const float4 x = j0 / SUB > i / SUB ? make_float4(0.0f, 0.0f, 0.0f, 0.0f)
                                      : *reinterpret_cast<const float4 *>(&s.a[i][j0]);
  alignas(8) const In y[4] = {to<In>(x.x), to<In>(x.y), to<In>(x.z), to<In>(x.w)};
  return *reinterpret_cast<const uint2 *>(y);
}

/// A in the input type into a16 from unit_lower_inverse's fp32 result (solved_quad). Called by
/// the whole block.
template <class In, int LC>
__device__ void solved_in_input_type(const LowerInverse &s, In (*a16)[LC]) {
  for (int e = threadIdx.x; e < C * (C / 4); e += blockDim.x) {
    const int i = e / (C / 4), j0 = 4 * (e % (C / 4));
    *reinterpret_cast<uint2 *>(&a16[i][j0]) = solved_quad<In>(s, i, j0);
  }
}

/// The scalar gate's WY kernel in 72 KB (K = V = 128), three blocks an SM (the default): q's
/// place holds A0 once the scores are made and A in the input type once the solve is done, w's
/// right factor is made in k's place, and Aqk goes out from the accumulators. The same values as
/// chunk_delta_wy_tc_kernel's, bit for bit: the same products, exps and roundings, in the same
/// order.
template <class T, int K, int V> struct WyLeanShared {
  static constexpr int LK = K + PAD, LV = V + PAD, LC = C + PAD, LF = C + 1;
  union { // q, then A0 (fp32) until the solve ends, then A in the input type
    T q[C][LK];
    float a0[C][LF];
    T a16[C][LC];
  } first;
  T k[C][LK]; // k, then beta k e^{g_cum}: w's right factor
  T v[C][LV]; // v, then beta v: u's right factor
  float beta[C];
  union { // the gates until the right factors are made, then A in fp32 and the solve's sums
    ChunkGates<K, true> gates;
    LowerInverse solve;
  };
};

template <class In, int K, int V>
__global__ void __launch_bounds__(WY_THREADS, 3)
    chunk_delta_wy_lean_tc_kernel(const In *q, const In *k, const In *v, const float *g,
                                  const float *beta, DeltaTcScratch x, DeltaTcStages st,
                                  DeviceChunkTable t, ChunkDims d) {
  using S = WyLeanShared<In, K, V>;
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  S &s = *reinterpret_cast<S *>(shared_bytes);
  const int c = blockIdx.x, hd = blockIdx.y, tid = threadIdx.x, warp = tid / 32;
  const ChunkRows rows = chunk_rows(t, c);
  const int n = rows.n;
  const long row_at = static_cast<long>(rows.bos) * d.H + hd; // row bos of head hd
  load_wy_chunk<In, K, V, true>(&s.first.q[0][0], &s.k[0][0], &s.v[0][0], S::LK, S::LV, s.beta,
                                s.gates, q, k, v, g, beta, rows, hd, d, st.g_cum);
  const auto g_cum = s.gates.g;
  store_decayed_factors<In, K, true>(&s.first.q[0][0], &s.k[0][0], S::LK, s.gates, rows, c, hd, d,
                                     static_cast<In *>(x.qd), static_cast<In *>(x.kd), x.decay);
  store_row_factors(s.gates, rows, hd, d, x.row_up, x.row_to_end);

  // -- Aqk = (q~ k^T) . D, out from the accumulators (two values of a row a store), then A0 =
  //    Diag(beta) (k k^T) . D in q's place: warp w, rows [16 (w % 4), +16), the column tiles of
  //    parity w / 4 up to the diagonal; one exp per (row, column)
  const int row0 = SUB * (warp % 4), side = warp / 4;
  scalar_scores_out<In, K>(&s.first.q[0][0], &s.k[0][0], S::LK, g_cum, row0, side, rows, hd, d,
                           static_cast<In *>(x.Aqk));
  {
    mma::Acc kk[C / 8];
    lower_rows_times_transposed(kk, &s.k[0][0], S::LK, row0, &s.k[0][0], S::LK, side, K);
    const SideGates side_g = side_gates(g_cum, row0, side);
    const float beta_row[2] = {s.beta[row0 + mma::acc_row(0)], s.beta[row0 + mma::acc_row(2)]};
    __syncthreads(); // every warp is done with q: A0 takes its place
    each_place_of_side(row0, side, [&](int nt, int e, int i, int j) {
      s.first.a0[i][j] = j < i ? beta_row[e / 2] * kk[nt].x[e] * side_g.decay(nt, e) : 0.0f;
    });
  }
  mma::wait_copies(); // v's copy, read past this barrier
  __syncthreads();    // A0 is in; k is read by no product any more
  if (st.A0)
    for (int e = tid; e < n * C; e += WY_THREADS)
      st.A0[at_score(rows.bos + e / C, hd, e % C, d)] = s.first.a0[e / C][e % C];
  // the right factors of w and u, in place
  map_rows<In, K>(&s.k[0][0], S::LK, &s.k[0][0], S::LK, C,
                  [&](int i, int, float y) { return s.beta[i] * y * s.gates.row_up[i]; });
  map_rows<In, V>(&s.v[0][0], S::LV, &s.v[0][0], S::LV, C,
                  [&](int i, int, float y) { return s.beta[i] * y; });

  // -- A = (I + A0)^-1 in fp32, then in the input type in A0's place (zeros above the diagonal
  //    blocks, whose place the solve does not write)
  __syncthreads(); // the gates' place is free for the solve
  unit_lower_inverse(s.first.a0, s.solve, [&](int i, int j, float y) {
    if (st.A && i < n)
      st.A[at_score(rows.bos + i, hd, j, d)] = val(to<In>(y));
  });
  solved_in_input_type(s.solve, s.first.a16);
  __syncthreads();
  if (x.A)
    store_scores(static_cast<In *>(x.A), s.first.a16, rows, hd, d);

  // -- w = A (beta k e^{g_cum}), u = A (beta v) on the warp's rows and half the columns
  a_times<In, K>(&s.first.a16[0][0], S::LC, &s.k[0][0], S::LK, row0, side, rows, row_at, d.H,
                 static_cast<In *>(x.w), st.w);
  a_times<In, V>(&s.first.a16[0][0], S::LC, &s.v[0][0], S::LV, row0, side, rows, row_at, d.H,
                 static_cast<In *>(x.u), st.u);
}

/// A = (I + A0)^-1 in the input type, for gated_delta_rule's fused forms
/// (launch_chunk_delta_fused_tc with a_given, launch_chunk_delta_fused_states_tc):
/// chunk_delta_wy_lean_tc_kernel's k k^T, A0, solve and A, the same operations on the same values,
/// so that a backward from the saved A gives what one solving again does, bit for bit; without v
/// and w and u's products. A0 is held by columns (unit_lower_inverse's BY_COLUMNS: the stores from
/// k k^T's accumulators free of bank conflicts), the solve's places take those of k and the gates
/// once A0 is made, and A goes out from the solve's fp32 result (store_solved): 38 KB at K = 128,
/// five blocks an SM at 48 registers (55.5 KB, 64 registers and four before: 108 us a launch
/// against 81 on an H200; reports/gpu/tensor_core.md, "The other parity's accumulators").
template <class T, int K> struct AOnlyShared {
  static constexpr int LK = K + PAD, LT = C + 4; // LT = 4 (mod 32): A0's stores one wavefront
  float a0t[C][LT];                              // A0 by columns: a0t[j][i] = A0_ij
  float beta[C];
  union {
    struct {
      T k[C][LK];
      ChunkGates<K, true> gates;
    } in;               // until A0 is made
    LowerInverse solve; // then A in fp32 and the solve's sums
  };
};

/// Rows [0, n) of A in the input type out to A [B*T, H, C] from unit_lower_inverse's fp32 result
/// (solved_quad: solved_in_input_type's values), with no copy in shared memory between. Called
/// by the whole block.
template <class In>
__device__ void store_solved(const LowerInverse &s, In *A, ChunkRows rows, int hd,
                             const ChunkDims &d) {
  for (int e = threadIdx.x; e < rows.n * (C / 4); e += blockDim.x) {
    const int i = e / (C / 4), j0 = 4 * (e % (C / 4));
    *reinterpret_cast<uint2 *>(A + at_score(rows.bos + i, hd, j0, d)) = solved_quad<In>(s, i, j0);
  }
}

template <class In, int K>
__global__ void __launch_bounds__(WY_THREADS, 5)
    chunk_delta_a_tc_kernel(const In *k, const float *g, const float *beta, In *A,
                            DeviceChunkTable t, ChunkDims d) {
  using S = AOnlyShared<In, K>;
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  S &s = *reinterpret_cast<S *>(shared_bytes);
  const int c = blockIdx.x, hd = blockIdx.y, warp = threadIdx.x / 32;
  const ChunkRows rows = chunk_rows(t, c);
  load_wy_chunk<In, K, K, true, false, false>(nullptr, &s.in.k[0][0], nullptr, S::LK, 0, s.beta,
                                              s.in.gates, nullptr, k, nullptr, g, beta, rows, hd, d,
                                              nullptr);
  // A0 = Diag(beta) (k k^T) . D, as chunk_delta_wy_lean_tc_kernel makes it, stored by columns;
  // the warp's side known when compiled, so that the accumulators of the other side's column
  // tiles take no registers (48 a thread, where a side known when run took 64 and spilled)
  const int row0 = SUB * (warp % 4);
  const auto a0_of_side = [&](auto side_constant) {
    constexpr int side = decltype(side_constant)::value;
    mma::Acc kk[C / 8];
    lower_rows_times_transposed(kk, &s.in.k[0][0], S::LK, row0, &s.in.k[0][0], S::LK, side, K);
    const SideGates side_g = side_gates(s.in.gates.g, row0, side);
    const float beta_row[2] = {s.beta[row0 + mma::acc_row(0)], s.beta[row0 + mma::acc_row(2)]};
    each_place_of_side(row0, side, [&](int nt, int e, int i, int j) {
      s.a0t[j][i] = j < i ? beta_row[e / 2] * kk[nt].x[e] * side_g.decay(nt, e) : 0.0f;
    });
  };
  if (warp / 4 == 0)
    a0_of_side(std::integral_constant<int, 0>{});
  else
    a0_of_side(std::integral_constant<int, 1>{});
  __syncthreads(); // A0 is in; k and the gates are read by no one: the solve takes their place
  // two rows a thread below the diagonal blocks, fewer shared-memory wavefronts
  // (reports/gpu/tensor_core.md, "The A kernel's shared-memory wavefronts")
  unit_lower_inverse<2, true>(s.a0t, s.solve, [](int, int, float) {});
  store_solved(s.solve, A, rows, hd, d);
}

/// The backward's WY pass from the forward's A (DeltaSaved): chunk_delta_wy_tc_kernel without the
/// solve, and without the scores but for Aqk when SCORES (the forward kept A alone: gated_oja's,
/// whose backward's q is dO). q, k, v and A copied in, then qd, kd and e^{gl}
/// (store_decayed_factors; a scalar gate's row factors in place of qd and kd, q then read for Aqk
/// alone), Aqk when SCORES, w's and u's right factors in the places of k
/// and v, and w = A (beta k e^{g_cum}), u = A (beta v): the same operations on the same values as
/// the WY kernels', so the same results bit for bit. 96 KB at K = V = 128 for kda's gates (105 KB
/// with Aqk; two blocks an SM), 62 KB for a scalar gate's.
template <class T, int K, int V, bool SCALAR, bool SCORES> struct WyFromAShared {
  static constexpr int LK = K + PAD, LV = V + PAD, LC = C + PAD;
  T q[C][LK];
  T k[C][LK]; // k, then beta k e^{g_cum}: w's right factor
  T v[C][LV]; // v, then beta v: u's right factor
  T a16[C][LC];
  T aqk[SCORES && !SCALAR ? C : 1][LC]; // a per-key gate's Aqk (a scalar gate's goes out directly)
  float beta[C];
  ChunkGates<K, SCALAR> gates;
};

template <class In, int K, int V, bool SCALAR, bool SCORES>
__global__ void __launch_bounds__(WY_THREADS, 2)
    chunk_delta_wy_from_a_tc_kernel(const In *q, const In *k, const In *v, const float *g,
                                    const float *beta, const In *A, DeltaTcScratch x,
                                    DeviceChunkTable t, ChunkDims d) {
  using S = WyFromAShared<In, K, V, SCALAR, SCORES>;
  constexpr int LG = ChunkGates<K, SCALAR>::LG;
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  S &s = *reinterpret_cast<S *>(shared_bytes);
  const int c = blockIdx.x, hd = blockIdx.y, warp = threadIdx.x / 32;
  const ChunkRows rows = chunk_rows(t, c);
  const long row_at = static_cast<long>(rows.bos) * d.H + hd; // row bos of head hd
  // A's rows join the gates' group of copies (load_wy_chunk; rows past n zero)
  copy_rows_async(&s.a16[0][0], S::LC, A + row_at * C, static_cast<long>(d.H) * C, C, rows.n, C);
  // q is read for qd and Aqk alone: a scalar gate's row factors take qd's place
  load_wy_chunk<In, K, V, SCALAR, SCORES || !SCALAR>(&s.q[0][0], &s.k[0][0], &s.v[0][0], S::LK,
                                                     S::LV, s.beta, s.gates, q, k, v, g, beta, rows,
                                                     hd, d, nullptr);
  const float(*g_cum)[LG] = s.gates.g;
  store_decayed_factors<In, K, SCALAR>(&s.q[0][0], &s.k[0][0], S::LK, s.gates, rows, c, hd, d,
                                       static_cast<In *>(x.qd), static_cast<In *>(x.kd), x.decay);
  if constexpr (SCALAR)
    store_row_factors(s.gates, rows, hd, d, x.row_up, x.row_to_end);
  const int row0 = SUB * (warp % 4), side = warp / 4;
  if constexpr (SCORES && SCALAR) {
    scalar_scores_out<In, K>(&s.q[0][0], &s.k[0][0], S::LK, g_cum, row0, side, rows, hd, d,
                             static_cast<In *>(x.Aqk));
  } else if constexpr (SCORES) { // as chunk_delta_wy_tc_kernel's Aqk: factored, then wide rows
    per_key_scores<In, K>(&s.q[0][0], &s.k[0][0], S::LK, g_cum, row0, side, row0, d.scale,
                          [&](int i, int j, float y) { s.aqk[i][j] = to<In>(y); });
  }
  mma::wait_copies(); // v's copy
  __syncthreads();    // and every read of k above is done: its place takes w's right factor
  if constexpr (SCORES && !SCALAR)
    store_scores(static_cast<In *>(x.Aqk), s.aqk, rows, hd, d);
  map_rows<In, K>(&s.k[0][0], S::LK, &s.k[0][0], S::LK, C, [&](int i, int col, float y) {
    return s.beta[i] * y * (SCALAR ? s.gates.row_up[i] : fast_exp(g_cum[i][col]));
  });
  map_rows<In, V>(&s.v[0][0], S::LV, &s.v[0][0], S::LV, C,
                  [&](int i, int, float y) { return s.beta[i] * y; });
  __syncthreads();
  a_times<In, K>(&s.a16[0][0], S::LC, &s.k[0][0], S::LK, row0, side, rows, row_at, d.H,
                 static_cast<In *>(x.w), nullptr);
  a_times<In, V>(&s.a16[0][0], S::LC, &s.v[0][0], S::LV, row0, side, rows, row_at, d.H,
                 static_cast<In *>(x.u), nullptr);
}

/// Whether the scalar gate's WY kernel is the lean one, the default; RULEPROOF_WY_KERNEL=two in
/// the environment takes the kernel of two blocks an SM (chunk_delta_wy_tc_kernel<..., true>),
/// kept while the lean one is new.
bool lean_wy() {
  static const bool lean = [] {
    const char *kernel = std::getenv("RULEPROOF_WY_KERNEL");
    return !(kernel && std::string_view(kernel) == "two");
  }();
  return lean;
}

template <class In, int K, int V, bool SCALAR>
void launch_wy(const void *q, const void *k, const void *v, const float *g, const float *beta,
               const DeltaTcScratch &x, const DeltaTcStages &st, const DeviceChunkTable &t,
               const ChunkDims &d) {
  if constexpr (SCALAR) {
    if (lean_wy()) {
      const int bytes = static_cast<int>(sizeof(WyLeanShared<In, K, V>));
      auto *kernel = chunk_delta_wy_lean_tc_kernel<In, K, V>;
      allow_shared_memory(kernel, bytes, "chunk_delta_wy_lean_tc_kernel");
      kernel<<<dim3(t.NC, d.H), WY_THREADS, bytes>>>(in<In>(q), in<In>(k), in<In>(v), g, beta, x,
                                                     st, t, d);
      return;
    }
  }
  const int bytes = static_cast<int>(sizeof(WyShared<In, K, V, SCALAR>));
  auto *kernel = chunk_delta_wy_tc_kernel<In, K, V, SCALAR>;
  allow_shared_memory(kernel, bytes, "chunk_delta_wy_tc_kernel");
  kernel<<<dim3(t.NC, d.H), WY_THREADS, bytes>>>(in<In>(q), in<In>(k), in<In>(v), g, beta, x, st, t,
                                                 d);
}

template <class In, int K, int V>
void launch_wy_gate(const void *q, const void *k, const void *v, const float *g, const float *beta,
                    const DeltaTcScratch &x, const DeltaTcStages &st, const DeviceChunkTable &t,
                    const ChunkDims &d) {
  if (d.G == 1)
    launch_wy<In, K, V, true>(q, k, v, g, beta, x, st, t, d);
  else
    launch_wy<In, K, V, false>(q, k, v, g, beta, x, st, t, d);
}

template <class In, int K, int V, bool SCALAR, bool SCORES>
void launch_wy_from_a(const void *q, const void *k, const void *v, const float *g,
                      const float *beta, const void *A, const DeltaTcScratch &x,
                      const DeviceChunkTable &t, const ChunkDims &d) {
  const int bytes = static_cast<int>(sizeof(WyFromAShared<In, K, V, SCALAR, SCORES>));
  auto *kernel = chunk_delta_wy_from_a_tc_kernel<In, K, V, SCALAR, SCORES>;
  allow_shared_memory(kernel, bytes, "chunk_delta_wy_from_a_tc_kernel");
  kernel<<<dim3(t.NC, d.H), WY_THREADS, bytes>>>(in<In>(q), in<In>(k), in<In>(v), g, beta,
                                                 in<In>(A), x, t, d);
}

template <class In, int K>
void launch_a(const void *k, const float *g, const float *beta, void *A, const DeviceChunkTable &t,
              const ChunkDims &d) {
  const int bytes = static_cast<int>(sizeof(AOnlyShared<In, K>));
  auto *kernel = chunk_delta_a_tc_kernel<In, K>;
  allow_shared_memory(kernel, bytes, "chunk_delta_a_tc_kernel");
  kernel<<<dim3(t.NC, d.H), WY_THREADS, bytes>>>(in<In>(k), g, beta, out<In>(A), t, d);
}

} // namespace

void launch_chunk_delta_wy_from_a_tc(const void *q, const void *k, const void *v, const float *g,
                                     const float *beta, const void *A, const DeltaTcScratch &x,
                                     const DeviceChunkTable &t, const ChunkDims &d) {
  if (t.NC == 0)
    return;
  with_sizes(d, [&](auto y, auto ks, auto vs) {
    using In = decltype(y);
    constexpr int K = decltype(ks)::value, V = decltype(vs)::value;
    const bool scores = x.Aqk != nullptr;
    if (d.G == 1 && scores)
      launch_wy_from_a<In, K, V, true, true>(q, k, v, g, beta, A, x, t, d);
    else if (d.G == 1)
      launch_wy_from_a<In, K, V, true, false>(q, k, v, g, beta, A, x, t, d);
    else if (scores)
      launch_wy_from_a<In, K, V, false, true>(q, k, v, g, beta, A, x, t, d);
    else
      launch_wy_from_a<In, K, V, false, false>(q, k, v, g, beta, A, x, t, d);
  });
  check("chunk_delta_wy_from_a_tc_kernel");
}

void launch_chunk_delta_a_tc(const void *k, const float *g, const float *beta, void *A,
                             const DeviceChunkTable &t, const ChunkDims &d) {
  if (t.NC == 0)
    return;
  with_sizes(d, [&](auto y, auto ks, auto) {
    launch_a<decltype(y), decltype(ks)::value>(k, g, beta, A, t, d);
  });
  check("chunk_delta_a_tc_kernel");
}

void launch_chunk_delta_wy_tc(const void *q, const void *k, const void *v, const float *g,
                              const float *beta, const DeltaTcScratch &x, const DeltaTcStages &st,
                              const DeviceChunkTable &t, const ChunkDims &d) {
  if (t.NC == 0)
    return;
  with_sizes(d, [&](auto y, auto ks, auto vs) {
    launch_wy_gate<decltype(y), decltype(ks)::value, decltype(vs)::value>(q, k, v, g, beta, x, st,
                                                                          t, d);
  });
  check("chunk_delta_wy_tc_kernel");
}

} // namespace ruleproof::gpu::detail
