// ruleproof: chunkwise delta-rule kernels (gated_delta_rule: scalar gate; kda: per-key gate),
// forward and backward, on Hopper (sm_90). Inputs bf16 or fp16; gates, beta, states, every
// intermediate and every sum in fp32; outputs o, dq, dk, dv stored in the input type,
// everything else fp32. Chunk size C = 64.
//
// CPU reference, one grep away: reference/kda/chunk.hpp, a function of each kernel's name:
// chunk_wy_fwd (chunk_scaled_dot_kkt, solve_tril, recompute_w_u), chunk_delta_fwd_h,
// chunk_fwd_o; chunk_bwd_dv_local, chunk_bwd_dhu, chunk_bwd_dqkwg, chunk_wy_bwd
// (flash-linear-attention's prepare_wy_repr_bwd), chunk_local_cumsum_reverse; seed 003's forward
// steps 1-5 and backward steps 1-7; gated_delta_rule is kda with its gate repeated over the keys
// (reference/kda/variant.hpp, as_kda). The emulated twin of these kernels is gpu/twin.hpp; the
// host API with its shape checks gpu/chunk_delta.hpp. Shared with chunk_gla.cu: the stage
// chunk_local_cumsum, chunk_fwd_o and the device helpers (detail/chunk_device.cuh).
//
// Compile: part of the ruleproof_gpu library (nvcc -arch=sm_90, C++17), or by hand:
//   nvcc -std=c++17 -gencode=arch=compute_90,code=sm_90 -I. -c gpu/chunk_delta.cu
//
// Versions:
//   1. readable first, as chunk_gla.cu's version 1: one block per (chunk, head) or
//      (sequence, head, value tile), fp32 CUDA-core arithmetic, every decay exp(g_cum_i -
//      g_cum_j) taken pairwise, the triangular solve one column a thread. No tensor cores.
//   2. (this one) the same arithmetic in the same order, with the operands of chunk_wy_fwd,
//      chunk_bwd_dqkwg, chunk_wy_bwd, chunk_delta_fwd_h and chunk_bwd_dhu staged in shared
//      memory, as chunk_gla.cu's version 2 stages its own (KS columns at a time, each thread's
//      sums kept in registers); the state kernels keep a copy of their state tile in shared
//      memory beside the chunk's rows of w.
//
// Per chunk of n rows with start state h (K x V), g_cum the gate summed from the chunk start,
// q~ = scale q, gl = g_cum of the chunk's last row, R_ijc = exp(g_cum_ic - g_cum_jc):
//   A0_ij = beta_i sum_c k_ic k_jc R_ijc  (j < i)        A = (I + A0)^-1  (unit lower)
//   w = A Diag(beta) (k . e^g_cum),  u = A Diag(beta) v    (u is the new v before the state)
//   v_new = u - w h,  h' = Diag(e^gl) h + sum_j (k_j . e^{gl - g_cum_j}) v_new_j^T
//   o_i = sum_c q~_ic e^g_cum_ic h_c + sum_{j<=i} Aqk_ij v_new_j,  Aqk_ij = sum_c q~_ic k_jc R_ijc
// Backward of <dO, O> + <dS_T, S_T>, dh the gradient of the state after the chunk:
//   dv2 = Aqk^T dO + (k . e^{gl - g_cum}) dh               (the gradient of v_new)
//   dh_before = Diag(e^gl) dh + (q~ . e^g_cum)^T dO - w^T dv2
//   dB_ij = dO_i . v_new_j (j <= i); dq~_ic = e^g_cum_ic dO_i . h_c + sum_j dB_ij k_jc R_ijc
//   dk_ic = sum_{m>=i} dB_mi q~_mc R_mic + e^{gl_c - g_cum_ic} v_new_i . dh_c + (WY part)
//   dw = -dv2 h^T, then through the WY representation (prepare_wy_repr_bwd):
//   dA = dv2 (Diag(beta) v)^T + dw (Diag(beta) k . e^g_cum)^T, dA0 = -(A^T dA A^T) strictly
//   lower, dv = Diag(beta) A^T dv2, dbeta, and dk, dg through A0 and w;
//   dg = the suffix sum inside each chunk of the gradient of g_cum (summed over keys for a
//   scalar gate).
#include "detail/chunk_device.cuh" // load, store, at_k, at_v, at_state, at_score, gate,
                                   // chunk_rows, chunk_scores, decayed_scores,
                                   // lower_times_slice, chunk_fwd_o_kernel, check_sync,
                                   // allow_shared_memory, state_grid, with_input_type, in, out,
                                   // C, MAX_K, BV, THREADS, STATE_PER_THREAD, solve_tril,
                                   // read_state_tile, write_state_tile, decay_and_add,
                                   // share_state_tile, decayed_to_end, KeySlices, KS
#include "detail/delta_launch.hpp"

namespace ruleproof::gpu::detail {

namespace {

/// beta of row r, head h.
__device__ inline float beta_of(const float *beta, int r, int h, const ChunkDims &d) {
  const float b = beta[static_cast<long>(r) * d.H + h];
#ifdef RULEPROOF_PLANTED_BUG // gpu_check_planted only: a deliberate bug, beta read in bf16
  return __bfloat162float(__float2bfloat16_rn(b));
#else
  return b;
#endif
}

// ---------------------------------------------------------------------------------------
// chunk_scaled_dot_kkt, solve_tril, recompute_w_u: grid (NC, H), THREADS threads; one chunk
// of one head. A0's keys go through shared memory KS columns at a time (decayed_scores), then
// A takes their place; the right factors of u and w go through A0's place KS columns at a
// time once the solve has read A0.
template <class In>
__global__ void chunk_wy_fwd_kernel(const In *k, const In *v, const float *beta, const float *g_cum,
                                    float *A0_out, float *A_out, float *w, float *u,
                                    DeviceChunkTable t, ChunkDims d) {
  __shared__ union {
    float A0[C][C];
    float x[C][KS + 1]; // KS columns of Diag(beta) v or Diag(beta) (k . e^g_cum)
  } left;
  __shared__ union {
    KeySlices keys;
    float A[C][C];
  } right;
  const int c = blockIdx.x, hd = blockIdx.y, tid = threadIdx.x;
  const ChunkRows rows = chunk_rows(t, c);
  // A0 = Diag(beta) (k k^T . R), j < i
  decayed_scores(k, 1.0f, k, g_cum, rows, hd, d, true, left.A0, nullptr, right.keys);
  for (int e = tid; e < C * C; e += THREADS) {
    const int i = e / C, j = e % C;
    if (i < rows.n && j < i)
      left.A0[i][j] *= beta_of(beta, rows.bos + i, hd, d);
    right.A[i][j] = i == j ? 1.0f : 0.0f;
    if (i < rows.n)
      A0_out[at_score(rows.bos + i, hd, j, d)] = left.A0[i][j];
  }
  __syncthreads();
  solve_tril(left.A0, right.A, rows.n); // (I + A0) A = I
  __syncthreads();
  for (int e = tid; e < rows.n * C; e += THREADS)
    A_out[at_score(rows.bos + e / C, hd, e % C, d)] = right.A[e / C][e % C];
  for (int c0 = 0; c0 < d.V; c0 += KS) { // u = A Diag(beta) v
    __syncthreads();
    for (int e = tid; e < rows.n * KS; e += THREADS) {
      const int m = e / KS, col = e % KS;
      left.x[m][col] =
          beta_of(beta, rows.bos + m, hd, d) * load(v, at_v(rows.bos + m, hd, c0 + col, d));
    }
    __syncthreads();
    lower_times_slice(right.A, left.x, rows.n, [&](int i, int col, float acc) {
      u[at_v(rows.bos + i, hd, c0 + col, d)] = acc;
    });
  }
  for (int c0 = 0; c0 < d.K; c0 += KS) { // w = A Diag(beta) (k . e^g_cum)
    __syncthreads();
    for (int e = tid; e < rows.n * KS; e += THREADS) {
      const int m = e / KS, col = e % KS, r = rows.bos + m;
      left.x[m][col] = beta_of(beta, r, hd, d) *
                       (load(k, at_k(r, hd, c0 + col, d)) * expf(gate(g_cum, r, hd, c0 + col, d)));
    }
    __syncthreads();
    lower_times_slice(right.A, left.x, rows.n, [&](int i, int col, float acc) {
      w[at_k(rows.bos + i, hd, c0 + col, d)] = acc;
    });
  }
}

// ---------------------------------------------------------------------------------------
// chunk_fwd_h: grid (N, H, V / BV), THREADS threads, sizeof(DeltaFwdHShared) of dynamic shared
// memory; the block walks its sequence's chunks in order, keeping K x BV entries of the state in
// registers (entry e = tid + m THREADS is row e / BV, column e % BV of the tile), as
// chunk_gla.cu's chunk_fwd_h does, and a copy of them in shared memory for v_new, beside the
// chunk's rows of w.
struct DeltaFwdHShared {
  float k_decayed[C][MAX_K]; // k_jc exp(gl_c - g_cum_jc)
  float w[C][MAX_K];
  float h[MAX_K][BV]; // the state at the chunk's start, the block's value columns
  float v_new[C][BV];
};

template <class In>
__global__ void chunk_delta_fwd_h_kernel(const In *k, const float *w, const float *u,
                                         const float *g_cum, const float *h0, float *h,
                                         float *v_new, float *ht, DeviceChunkTable t, ChunkDims d) {
  extern __shared__ float4 delta_fwd_h_shared[];
  DeltaFwdHShared &s = *reinterpret_cast<DeltaFwdHShared *>(delta_fwd_h_shared);
  const int n = blockIdx.x, hd = blockIdx.y, v0 = blockIdx.z * BV, tid = threadIdx.x;
  float state[STATE_PER_THREAD];
  read_state_tile(state, h0, n, hd, v0, d);
  for (int c = t.seq_first_chunk[n]; c < t.seq_first_chunk[n + 1]; ++c) {
    const ChunkRows rows = chunk_rows(t, c);
    const int last = rows.bos + rows.n - 1;
    write_state_tile(state, h, c, hd, v0, d); // the state at the chunk's start
    __syncthreads();                          // the previous chunk's tiles are no longer read
    share_state_tile(state, s.h, d);
    for (int e = tid; e < rows.n * d.K; e += THREADS) {
      const int r = e / d.K, col = e % d.K;
      s.w[r][col] = w[at_k(rows.bos + r, hd, col, d)];
      s.k_decayed[r][col] = decayed_to_end(k, g_cum, rows.bos + r, last, hd, col, d);
    }
    __syncthreads();
    for (int e = tid; e < rows.n * BV; e += THREADS) { // v_new = u - w h
      const int r = e / BV, j = e % BV;
      float wh = 0;
      for (int i = 0; i < d.K; ++i)
        wh += s.w[r][i] * s.h[i][j];
      const float x = u[at_v(rows.bos + r, hd, v0 + j, d)] - wh;
      s.v_new[r][j] = x;
      v_new[at_v(rows.bos + r, hd, v0 + j, d)] = x;
    }
    __syncthreads();
    // h' = Diag(e^gl) h + K_dec^T V_new
    decay_and_add(state, s.k_decayed, s.v_new, rows.n, g_cum, last, hd, d);
  }
  write_state_tile(state, ht, n, hd, v0, d);
}

// ---------------------------------------------------------------------------------------
// chunk_bwd_dv_local: grid (NC, H), THREADS threads; dv2_j = sum_{i>=j} Aqk_ij dO_i.
template <class In>
__global__ void chunk_bwd_dv_local_kernel(const In *q, const In *k, const float *g_cum,
                                          const In *d_o, float *dv2, DeviceChunkTable t,
                                          ChunkDims d) {
  __shared__ float A[C][C];
  __shared__ KeySlices slices;
  const int c = blockIdx.x, hd = blockIdx.y;
  const ChunkRows rows = chunk_rows(t, c);
  chunk_scores(q, k, g_cum, rows, hd, d, A, nullptr, slices);
  for (int e = threadIdx.x; e < rows.n * d.V; e += blockDim.x) {
    const int j = e / d.V, jv = e % d.V;
    float acc = 0;
    for (int i = j; i < rows.n; ++i)
      acc += A[i][j] * load(d_o, at_v(rows.bos + i, hd, jv, d));
    dv2[at_v(rows.bos + j, hd, jv, d)] = acc;
  }
}

// ---------------------------------------------------------------------------------------
// chunk_bwd_dhu: grid (N, H, V / BV), THREADS threads, sizeof(DhuShared) of dynamic shared
// memory; the block walks its sequence's chunks backwards, keeping K x BV entries of dh in
// registers (as chunk_delta_fwd_h keeps the state) and a copy of them in shared memory, and
// completes dv2 for its value columns; the chunk's rows of w and dO are staged beside them.
struct DhuShared {
  float tile[C][MAX_K]; // k . e^{gl - g_cum}, then q~ . e^g_cum
  float w[C][MAX_K];
  float dh[MAX_K][BV]; // the gradient of the state after the chunk, the block's value columns
  float dv2[C][BV], d_o[C][BV];
};

template <class In>
__global__ void chunk_bwd_dhu_kernel(const In *q, const In *k, const float *w, const float *g_cum,
                                     const In *d_o, const float *dht, float *dv2, float *dh,
                                     float *dh0, DeviceChunkTable t, ChunkDims d) {
  extern __shared__ float4 dhu_shared[];
  DhuShared &s = *reinterpret_cast<DhuShared *>(dhu_shared);
  const int n = blockIdx.x, hd = blockIdx.y, v0 = blockIdx.z * BV, tid = threadIdx.x;
  const int entries = d.K * BV;
  float grad[STATE_PER_THREAD];
  read_state_tile(grad, dht, n, hd, v0, d);
  for (int c = t.seq_first_chunk[n + 1] - 1; c >= t.seq_first_chunk[n]; --c) {
    const ChunkRows rows = chunk_rows(t, c);
    const int last = rows.bos + rows.n - 1;
    write_state_tile(grad, dh, c, hd, v0, d); // the gradient of the state after chunk c
    __syncthreads();                          // the previous chunk's tiles are no longer read
    share_state_tile(grad, s.dh, d);
    for (int e = tid; e < rows.n * d.K; e += THREADS) {
      const int r = e / d.K, col = e % d.K;
      s.w[r][col] = w[at_k(rows.bos + r, hd, col, d)];
      s.tile[r][col] = decayed_to_end(k, g_cum, rows.bos + r, last, hd, col, d);
    }
    for (int e = tid; e < rows.n * BV; e += THREADS) {
      const int r = e / BV, j = e % BV;
      s.d_o[r][j] = load(d_o, at_v(rows.bos + r, hd, v0 + j, d));
    }
    __syncthreads();
    for (int e = tid; e < rows.n * BV; e += THREADS) { // dv2 += (k . e^{gl - g_cum}) dh
      const int r = e / BV, j = e % BV;
      float k_dh = 0;
      for (int i = 0; i < d.K; ++i)
        k_dh += s.tile[r][i] * s.dh[i][j];
      const long at = at_v(rows.bos + r, hd, v0 + j, d);
      const float x = dv2[at] + k_dh;
      dv2[at] = x;
      s.dv2[r][j] = x;
    }
    __syncthreads();
    for (int e = tid; e < rows.n * d.K; e += THREADS) {
      const int r = e / d.K, col = e % d.K;
      s.tile[r][col] = (load(q, at_k(rows.bos + r, hd, col, d)) * d.scale) *
                       expf(gate(g_cum, rows.bos + r, hd, col, d));
    }
    __syncthreads();
#pragma unroll
    for (int m = 0; m < STATE_PER_THREAD; ++m) { // dh = Diag(e^gl) dh' + Q_decayed^T dO - W^T dv2
      const int e = tid + m * THREADS, i = e / BV, j = e % BV;
      if (e < entries) {
        float q_do = 0, w_dv2 = 0;
        for (int r = 0; r < rows.n; ++r) {
          q_do += s.tile[r][i] * s.d_o[r][j];
          w_dv2 += s.w[r][i] * s.dv2[r][j];
        }
        grad[m] = (expf(gate(g_cum, last, hd, i, d)) * grad[m] + q_do) - w_dv2;
      }
    }
  }
  write_state_tile(grad, dh0, n, hd, v0, d);
}

// ---------------------------------------------------------------------------------------
// chunk_bwd_dqkwg: grid (NC, H), THREADS threads, sizeof(DqkwgShared) of dynamic shared
// memory; one chunk of one head. THREADS is a multiple of K, so each thread keeps one key
// column (tid % K) and the rows tid / K + p THREADS / K, and sums its own part of the last
// row's term sum_j k_jc dk_s_jc; the parts are added in a fixed order (the same bits every
// run). The sums over the values go through shared memory KS value columns at a time (each
// thread's sums kept in registers), then the chunk's q~, k and g_cum are staged whole for the
// sums over rows.
struct DqkwgShared {
  float dB[C][C];
  union {
    struct {
      float h[MAX_K][KS + 1], dh[MAX_K][KS + 1];              // KS value columns of h, dh
      float d_o[C][KS + 1], v_new[C][KS + 1], dv2[C][KS + 1]; // and of the chunk's rows
    } values;
    struct {
      float q[C][MAX_K + 1], k[C][MAX_K + 1], g[C][MAX_K + 1]; // q~, k, g_cum of the rows
    } keys;
  };
};

template <class In>
__global__ void chunk_bwd_dqkwg_kernel(const In *q, const In *k, const float *v_new,
                                       const float *g_cum, const float *h, const In *d_o,
                                       const float *dh, const float *dv2, In *dq, float *dk_qkw,
                                       float *dw, float *dG, DeviceChunkTable t, ChunkDims d) {
  constexpr int PAIRS = C * C / THREADS, ROWS = C * MAX_K / THREADS;
  extern __shared__ float4 dqkwg_shared[];
  DqkwgShared &s = *reinterpret_cast<DqkwgShared *>(dqkwg_shared);
  __shared__ float k_dk_s_part[THREADS];
  const int c = blockIdx.x, hd = blockIdx.y, tid = threadIdx.x;
  const ChunkRows rows = chunk_rows(t, c);
  const int n = rows.n, bos = rows.bos, last = bos + n - 1;
  const int col = tid % d.K, row_step = THREADS / d.K;
  float b[PAIRS] = {};                        // dB = dO V_new^T, lower triangle
  float do_h[ROWS] = {}, v_new_dh[ROWS] = {}; // dO_i . h_col, v_new_i . dh_col
  float dv2_h[ROWS] = {};                     // dv2_i . h_col
  for (int c0 = 0; c0 < d.V; c0 += KS) {
    __syncthreads(); // the previous slice is no longer read
    for (int e = tid; e < d.K * KS; e += THREADS) {
      const int i = e / KS, j = e % KS;
      s.values.h[i][j] = h[at_state(c, hd, i, c0 + j, d)];
      s.values.dh[i][j] = dh[at_state(c, hd, i, c0 + j, d)];
    }
    for (int e = tid; e < n * KS; e += THREADS) {
      const int r = e / KS, j = e % KS;
      const long at = at_v(bos + r, hd, c0 + j, d);
      s.values.d_o[r][j] = load(d_o, at);
      s.values.v_new[r][j] = v_new[at];
      s.values.dv2[r][j] = dv2[at];
    }
    __syncthreads();
#pragma unroll
    for (int p = 0; p < PAIRS; ++p) {
      const int e = tid + p * THREADS, i = e / C, j = e % C;
      if (i < n && j <= i)
        for (int jv = 0; jv < KS; ++jv)
          b[p] += s.values.d_o[i][jv] * s.values.v_new[j][jv];
    }
#pragma unroll
    for (int p = 0; p < ROWS; ++p) {
      const int i = tid / d.K + p * row_step;
      if (i < n)
        for (int jv = 0; jv < KS; ++jv) {
          const float h_cj = s.values.h[col][jv];
          do_h[p] += s.values.d_o[i][jv] * h_cj;
          v_new_dh[p] += s.values.v_new[i][jv] * s.values.dh[col][jv];
          dv2_h[p] += s.values.dv2[i][jv] * h_cj;
        }
    }
  }
  __syncthreads(); // the value slices are no longer read
#pragma unroll
  for (int p = 0; p < PAIRS; ++p)
    s.dB[(tid + p * THREADS) / C][(tid + p * THREADS) % C] = b[p];
  for (int e = tid; e < n * d.K; e += THREADS) {
    const int r = e / d.K, kc = e % d.K;
    s.keys.q[r][kc] = load(q, at_k(bos + r, hd, kc, d)) * d.scale;
    s.keys.k[r][kc] = load(k, at_k(bos + r, hd, kc, d));
    s.keys.g[r][kc] = gate(g_cum, bos + r, hd, kc, d);
  }
  __syncthreads();
  float k_dk_s_sum = 0;
#pragma unroll
  for (int p = 0; p < ROWS; ++p) {
    const int i = tid / d.K + p * row_step;
    if (i < n) {
      const int r = bos + i;
      const float g_i = s.keys.g[i][col];
      float inside_q = 0; // sum_{j<=i} dB_ij k_jc R_ijc
      for (int j = 0; j <= i; ++j)
        inside_q += s.dB[i][j] * s.keys.k[j][col] * expf(g_i - s.keys.g[j][col]);
      float dk_o = 0; // sum_{m>=i} dB_mi q~_mc R_mic
      for (int m = i; m < n; ++m)
        dk_o += s.dB[m][i] * s.keys.q[m][col] * expf(s.keys.g[m][col] - g_i);
      const float q_i = s.keys.q[i][col], k_i = s.keys.k[i][col];
      const float dq_tilde = expf(g_i) * do_h[p] + inside_q;
      const float dk_s = expf(gate(g_cum, last, hd, col, d) - g_i) * v_new_dh[p]; // the state
      const float k_dk_s = k_i * dk_s;
      store(dq, at_k(r, hd, col, d), d.scale * dq_tilde);
      dk_qkw[at_k(r, hd, col, d)] = dk_o + dk_s;
      dw[at_k(r, hd, col, d)] = -dv2_h[p];
      dG[at_k(r, hd, col, d)] = q_i * dq_tilde - k_i * dk_o - k_dk_s;
      k_dk_s_sum += k_dk_s;
    }
  }
  k_dk_s_part[tid] = k_dk_s_sum;
  __syncthreads(); // every row's dG is written and visible to the block, every part summed
  if (tid < d.K) { // the last row: e^gl . rowsum(h . dh) + sum_j k_j . dk_s_j
    const int kc = tid;
    float h_dh = 0;
    for (int jv = 0; jv < d.V; ++jv)
      h_dh += h[at_state(c, hd, kc, jv, d)] * dh[at_state(c, hd, kc, jv, d)];
    float k_dk_s = 0;
    for (int p = 0; p < row_step; ++p)
      k_dk_s += k_dk_s_part[kc + p * d.K];
    dG[at_k(last, hd, kc, d)] += expf(gate(g_cum, last, hd, kc, d)) * h_dh + k_dk_s;
  }
}

// ---------------------------------------------------------------------------------------
// prepare_wy_repr_bwd: grid (NC, H), THREADS threads, sizeof(WyBwdShared) of dynamic shared
// memory; one chunk of one head. The operands go through shared memory: KS columns at a time
// for dA and X (each thread's sums in registers), then the chunk's k, g_cum and dw whole for
// dk and the gate, then dv2 and v whole for dv; dbeta's three parts are summed as they come
// and added in the formula's order.
struct WyBwdShared {
  float A[C][C];
  float dA[C][C]; // dA, then dA0
  float T[C][C];  // A^T dA, then X = k k^T . R (strictly lower)
  float beta[C], dbeta_w[C], dbeta_A0[C];
  union {
    struct {
      float left[C][KS + 1], right[C][KS + 1];
    } slices; // KS columns of (dv2, Diag(beta) v), then of (dw, Diag(beta) (k . e^g_cum))
    KeySlices keys;
    struct {
      float k[C][MAX_K + 1], g[C][MAX_K + 1], dw[C][MAX_K + 1];
    } keyed; // the chunk's rows, whole
    struct {
      float dv2[C][MAX_K + 1], v[C][MAX_K + 1];
    } valued;
  };
};

template <class In>
__global__ void chunk_wy_bwd_kernel(const In *k, const In *v, const float *beta, const float *g_cum,
                                    const float *A_stage, const float *dw, const float *dv2,
                                    const float *dk_qkw, In *dk, In *dv, float *dbeta, float *dG,
                                    DeviceChunkTable t, ChunkDims d) {
  constexpr int PAIRS = C * C / THREADS;
  extern __shared__ float4 wy_bwd_shared[];
  WyBwdShared &s = *reinterpret_cast<WyBwdShared *>(wy_bwd_shared);
  const int c = blockIdx.x, hd = blockIdx.y, tid = threadIdx.x;
  const ChunkRows rows = chunk_rows(t, c);
  const int n = rows.n, bos = rows.bos;
  for (int e = tid; e < C * C; e += THREADS) {
    const int i = e / C, j = e % C;
    s.A[i][j] = i < n ? A_stage[at_score(bos + i, hd, j, d)] : 0.0f;
  }
  if (tid < n)
    s.beta[tid] = beta_of(beta, bos + tid, hd, d);
  // dA = dv2 (Diag(beta) v)^T + dw (Diag(beta) k . e^g_cum)^T, lower triangle
  float from_u[PAIRS] = {}, from_w[PAIRS] = {};
  for (int c0 = 0; c0 < d.V; c0 += KS) {
    __syncthreads(); // beta is staged; the previous slice is no longer read
    for (int e = tid; e < n * KS; e += THREADS) {
      const int r = e / KS, jv = e % KS;
      s.slices.left[r][jv] = dv2[at_v(bos + r, hd, c0 + jv, d)];
      s.slices.right[r][jv] = s.beta[r] * load(v, at_v(bos + r, hd, c0 + jv, d));
    }
    __syncthreads();
#pragma unroll
    for (int p = 0; p < PAIRS; ++p) {
      const int e = tid + p * THREADS, i = e / C, j = e % C;
      if (i < n && j <= i)
        for (int jv = 0; jv < KS; ++jv)
          from_u[p] += s.slices.left[i][jv] * s.slices.right[j][jv];
    }
  }
  for (int c0 = 0; c0 < d.K; c0 += KS) {
    __syncthreads();
    for (int e = tid; e < n * KS; e += THREADS) {
      const int r = e / KS, kc = e % KS;
      s.slices.left[r][kc] = dw[at_k(bos + r, hd, c0 + kc, d)];
      s.slices.right[r][kc] = s.beta[r] * (load(k, at_k(bos + r, hd, c0 + kc, d)) *
                                           expf(gate(g_cum, bos + r, hd, c0 + kc, d)));
    }
    __syncthreads();
#pragma unroll
    for (int p = 0; p < PAIRS; ++p) {
      const int e = tid + p * THREADS, i = e / C, j = e % C;
      if (i < n && j <= i)
        for (int kc = 0; kc < KS; ++kc)
          from_w[p] += s.slices.left[i][kc] * s.slices.right[j][kc];
    }
  }
#pragma unroll
  for (int p = 0; p < PAIRS; ++p) {
    const int e = tid + p * THREADS, i = e / C, j = e % C;
    s.dA[i][j] = (i < n && j <= i) ? from_u[p] + from_w[p] : 0.0f;
  }
  __syncthreads();
  for (int e = tid; e < C * C; e += THREADS) { // T = A^T dA
    const int i = e / C, j = e % C;
    float x = 0;
    if (i < n && j < n)
      for (int m = max(i, j); m < n; ++m)
        x += s.A[m][i] * s.dA[m][j];
    s.T[i][j] = x;
  }
  __syncthreads();
  for (int e = tid; e < C * C; e += THREADS) { // dA0 = -(T A^T), strictly lower
    const int i = e / C, j = e % C;
    float x = 0;
    if (i < n && j < i)
      for (int m = 0; m <= j; ++m)
        x += s.T[i][m] * s.A[j][m];
    s.dA[i][j] = -x;
  }
  // X = k k^T . R, strictly lower (decayed_scores synchronises before it writes T)
  decayed_scores(k, 1.0f, k, g_cum, rows, hd, d, true, s.T, nullptr, s.keys);
  for (int e = tid; e < n * d.K; e += THREADS) {
    const int r = e / d.K, kc = e % d.K;
    s.keyed.k[r][kc] = load(k, at_k(bos + r, hd, kc, d));
    s.keyed.g[r][kc] = gate(g_cum, bos + r, hd, kc, d);
    s.keyed.dw[r][kc] = dw[at_k(bos + r, hd, kc, d)];
  }
  __syncthreads();
  // dk and the gate through w (k . e^g_cum) and A0 = Diag(beta) X, dX = Diag(beta) dA0
  const int col = tid % d.K;
  for (int i = tid / d.K; i < n; i += THREADS / d.K) {
    const float g_i = s.keyed.g[i][col], b_i = s.beta[i];
    const float k_i = s.keyed.k[i][col], up = expf(g_i);
    float at_dw = 0; // (A^T dw)_ic
    for (int m = i; m < n; ++m)
      at_dw += s.A[m][i] * s.keyed.dw[m][col];
    float dk_left = 0; // sum_{j<i} dX_ij k_jc R_ijc
    for (int j = 0; j < i; ++j)
      dk_left += (b_i * s.dA[i][j]) * s.keyed.k[j][col] * expf(g_i - s.keyed.g[j][col]);
    float dk_right = 0; // sum_{m>i} dX_mi k_mc R_mic
    for (int m = i + 1; m < n; ++m)
      dk_right += (s.beta[m] * s.dA[m][i]) * s.keyed.k[m][col] * expf(s.keyed.g[m][col] - g_i);
    const float dk_decayed = b_i * at_dw;
    const long at = at_k(bos + i, hd, col, d);
    store(dk, at, dk_qkw[at] + ((up * dk_decayed + dk_left) + dk_right));
    dG[at] += (k_i * up) * dk_decayed + k_i * dk_left - k_i * dk_right;
  }
  if (tid < n) { // dbeta's parts through w and A0: (A^T dw)_i . (k . e^g)_i, dA0_i . X_i
    const int i = tid;
    float from_dw = 0, from_A0 = 0;
    for (int kc = 0; kc < d.K; ++kc) {
      float at_dw = 0;
      for (int m = i; m < n; ++m)
        at_dw += s.A[m][i] * s.keyed.dw[m][kc];
      from_dw += at_dw * (s.keyed.k[i][kc] * expf(s.keyed.g[i][kc]));
    }
    for (int j = 0; j < i; ++j)
      from_A0 += s.dA[i][j] * s.T[i][j];
    s.dbeta_w[i] = from_dw;
    s.dbeta_A0[i] = from_A0;
  }
  __syncthreads(); // the keyed rows are no longer read
  for (int e = tid; e < n * d.V; e += THREADS) {
    const int r = e / d.V, jv = e % d.V;
    s.valued.dv2[r][jv] = dv2[at_v(bos + r, hd, jv, d)];
    s.valued.v[r][jv] = load(v, at_v(bos + r, hd, jv, d));
  }
  __syncthreads();
  for (int e = tid; e < n * d.V; e += THREADS) { // dv = Diag(beta) A^T dv2
    const int i = e / d.V, jv = e % d.V;
    float at_du = 0;
    for (int m = i; m < n; ++m)
      at_du += s.A[m][i] * s.valued.dv2[m][jv];
    store(dv, at_v(bos + i, hd, jv, d), s.beta[i] * at_du);
  }
  if (tid < n) { // dbeta_i = (A^T dv2)_i . v_i + (A^T dw)_i . (k . e^g)_i + dA0_i . X_i
    const int i = tid;
    float from_dv2 = 0;
    for (int jv = 0; jv < d.V; ++jv) {
      float at_du = 0;
      for (int m = i; m < n; ++m)
        at_du += s.A[m][i] * s.valued.dv2[m][jv];
      from_dv2 += at_du * s.valued.v[i][jv];
    }
    dbeta[static_cast<long>(bos + i) * d.H + hd] = from_dv2 + s.dbeta_w[i] + s.dbeta_A0[i];
  }
}

// ---------------------------------------------------------------------------------------
// chunk_local_cumsum reverse: grid (NC, H), K threads; thread col sums its key's dG from the
// chunk's last row up (in place), then, for a scalar gate, the keys are summed row by row.
__global__ void chunk_local_cumsum_reverse_kernel(float *dG, float *dg, DeviceChunkTable t,
                                                  ChunkDims d) {
  const int c = blockIdx.x, hd = blockIdx.y, col = threadIdx.x;
  const ChunkRows rows = chunk_rows(t, c);
  float running = 0;
  for (int i = rows.n - 1; i >= 0; --i) {
    const long at = at_k(rows.bos + i, hd, col, d);
    running += dG[at];
    if (d.G == 1)
      dG[at] = running;
    else
      dg[at] = running;
  }
  if (d.G != 1)
    return;
  __syncthreads(); // every key's column is summed; now add the keys up, row by row
  for (int i = col; i < rows.n; i += blockDim.x) {
    float sum = 0;
    for (int kc = 0; kc < d.K; ++kc)
      sum += dG[at_k(rows.bos + i, hd, kc, d)];
    dg[static_cast<long>(rows.bos + i) * d.H + hd] = sum;
  }
}

} // namespace

void launch_chunk_wy_fwd(const void *k, const void *v, const float *beta, const float *g_cum,
                         float *A0, float *A, float *w, float *u, const DeviceChunkTable &t,
                         const ChunkDims &d) {
  if (t.NC == 0)
    return;
  const dim3 grid(t.NC, d.H);
  with_input_type(d, [&](auto x) {
    using In = decltype(x);
    chunk_wy_fwd_kernel<<<grid, THREADS>>>(in<In>(k), in<In>(v), beta, g_cum, A0, A, w, u, t, d);
  });
  check_sync("chunk_wy_fwd_kernel");
}

void launch_chunk_delta_fwd_h(const void *k, const float *w, const float *u, const float *g_cum,
                              const float *h0, float *h, float *v_new, float *ht,
                              const DeviceChunkTable &t, const ChunkDims &d) {
  if (t.N == 0)
    return;
  const int bytes = static_cast<int>(sizeof(DeltaFwdHShared));
  with_input_type(d, [&](auto x) {
    using In = decltype(x);
    allow_shared_memory(chunk_delta_fwd_h_kernel<In>, bytes, "chunk_delta_fwd_h_kernel");
    chunk_delta_fwd_h_kernel<<<state_grid(t, d), THREADS, bytes>>>(in<In>(k), w, u, g_cum, h0, h,
                                                                   v_new, ht, t, d);
  });
  check_sync("chunk_delta_fwd_h_kernel");
}

void launch_chunk_delta_fwd_o(const void *q, const void *k, const float *v_new, const float *g_cum,
                              const float *h, void *o, const DeviceChunkTable &t,
                              const ChunkDims &d) {
  if (t.NC == 0)
    return;
  const dim3 grid(t.NC, d.H);
  with_input_type(d, [&](auto x) {
    using In = decltype(x);
    chunk_fwd_o_kernel<<<grid, THREADS>>>(in<In>(q), in<In>(k), v_new, g_cum, h, out<In>(o),
                                          nullptr, t, d);
  });
  check_sync("chunk_fwd_o_kernel");
}

void launch_chunk_bwd_dv_local(const void *q, const void *k, const float *g_cum, const void *d_o,
                               float *dv2, const DeviceChunkTable &t, const ChunkDims &d) {
  if (t.NC == 0)
    return;
  const dim3 grid(t.NC, d.H);
  with_input_type(d, [&](auto x) {
    using In = decltype(x);
    chunk_bwd_dv_local_kernel<<<grid, THREADS>>>(in<In>(q), in<In>(k), g_cum, in<In>(d_o), dv2, t,
                                                 d);
  });
  check_sync("chunk_bwd_dv_local_kernel");
}

void launch_chunk_bwd_dhu(const void *q, const void *k, const float *w, const float *g_cum,
                          const void *d_o, const float *dht, float *dv2, float *dh, float *dh0,
                          const DeviceChunkTable &t, const ChunkDims &d) {
  if (t.N == 0)
    return;
  const int bytes = static_cast<int>(sizeof(DhuShared));
  with_input_type(d, [&](auto x) {
    using In = decltype(x);
    allow_shared_memory(chunk_bwd_dhu_kernel<In>, bytes, "chunk_bwd_dhu_kernel");
    chunk_bwd_dhu_kernel<<<state_grid(t, d), THREADS, bytes>>>(
        in<In>(q), in<In>(k), w, g_cum, in<In>(d_o), dht, dv2, dh, dh0, t, d);
  });
  check_sync("chunk_bwd_dhu_kernel");
}

void launch_chunk_bwd_dqkwg(const void *q, const void *k, const float *v_new, const float *g_cum,
                            const float *h, const void *d_o, const float *dh, const float *dv2,
                            void *dq, float *dk_qkw, float *dw, float *dG,
                            const DeviceChunkTable &t, const ChunkDims &d) {
  if (t.NC == 0)
    return;
  const dim3 grid(t.NC, d.H);
  const int bytes = static_cast<int>(sizeof(DqkwgShared));
  with_input_type(d, [&](auto x) {
    using In = decltype(x);
    allow_shared_memory(chunk_bwd_dqkwg_kernel<In>, bytes, "chunk_bwd_dqkwg_kernel");
    chunk_bwd_dqkwg_kernel<<<grid, THREADS, bytes>>>(in<In>(q), in<In>(k), v_new, g_cum, h,
                                                     in<In>(d_o), dh, dv2, out<In>(dq), dk_qkw, dw,
                                                     dG, t, d);
  });
  check_sync("chunk_bwd_dqkwg_kernel");
}

void launch_chunk_wy_bwd(const void *k, const void *v, const float *beta, const float *g_cum,
                         const float *A, const float *dw, const float *dv2, const float *dk_qkw,
                         void *dk, void *dv, float *dbeta, float *dG, const DeviceChunkTable &t,
                         const ChunkDims &d) {
  if (t.NC == 0)
    return;
  const dim3 grid(t.NC, d.H);
  const int bytes = static_cast<int>(sizeof(WyBwdShared));
  with_input_type(d, [&](auto x) {
    using In = decltype(x);
    allow_shared_memory(chunk_wy_bwd_kernel<In>, bytes, "chunk_wy_bwd_kernel");
    chunk_wy_bwd_kernel<<<grid, THREADS, bytes>>>(in<In>(k), in<In>(v), beta, g_cum, A, dw, dv2,
                                                  dk_qkw, out<In>(dk), out<In>(dv), dbeta, dG, t,
                                                  d);
  });
  check_sync("chunk_wy_bwd_kernel");
}

void launch_chunk_local_cumsum_reverse(float *dG, float *dg, const DeviceChunkTable &t,
                                       const ChunkDims &d) {
  if (t.NC == 0)
    return;
  chunk_local_cumsum_reverse_kernel<<<dim3(t.NC, d.H), d.K>>>(dG, dg, t, d);
  check_sync("chunk_local_cumsum_reverse_kernel");
}

} // namespace ruleproof::gpu::detail
