// ruleproof: chunkwise dplr kernels, forward and backward, on Hopper (sm_90), in
// flash-linear-attention's parameterisation (per-key gate gk, the pair a, b). Inputs bf16 or
// fp16; gates, states, every intermediate and every sum in fp32; outputs o, dq, dk, dv, da, db
// stored in the input type, everything else fp32. Chunk size C = 64.
//
// CPU reference, one grep away: reference/dplr/chunk.hpp, a function of each kernel's name:
// chunk_dplr_fwd_wy (chunk_dplr_fwd_intra, solve_tril, recompute_w_c), chunk_dplr_fwd_h,
// chunk_dplr_fwd_o, chunk_dplr_bwd_dhu, chunk_dplr_bwd_wy, chunk_dplr_bwd_dqk (in
// chunk_backward_head's order); seed 001's WY form and its "Gated DPLR Backward", transposed),
// reference/dplr/dplr.hpp (as_core, from_core: Parameterisation::fla); what it shares with
// gated_oja, reference/low_rank/chunk.hpp. The emulated twin is gpu/twin.hpp; the host API with its
// shape checks gpu/chunk_dplr.hpp. Its backward's chunk_bwd_dv_local and chunk_bwd_dhu are
// chunk_delta.cu's (with b in place of k).
//
// Compile: part of the ruleproof_gpu library (nvcc -arch=sm_90, C++17), or by hand:
//   nvcc -std=c++17 -gencode=arch=compute_90,code=sm_90 -I. -c gpu/chunk_dplr.cu
//
// Versions:
//   1. readable first, as chunk_delta.cu's version 1: one block per (chunk, head) or
//      (sequence, head, value tile), fp32 CUDA-core arithmetic, every decay exp(g_cum_i -
//      g_cum_j) taken pairwise (exponents <= 0), the triangular solve one column a thread
//      (detail/chunk_device.cuh, solve_tril). No tensor cores.
//   2. (this one) the same arithmetic in the same order, with the operands of the five dplr
//      kernels staged in shared memory, as chunk_delta.cu's version 2 stages its own (KS
//      columns at a time, each thread's sums kept in registers, or whole tiles where they fit);
//      chunk_dplr_fwd_h keeps a copy of its state tile in shared memory beside the chunk's rows
//      of w.
//
// dplr. flash-linear-attention's S_t = A_t S_{t-1} + b_t (a_t^T S_{t-1}) + k_t v_t^T is the
// reference's engine S_t = (A_t - a~_t d_t^T) S_{t-1} + k_t v_t^T with a~ = b and d = -a (read so,
// exactly; below a means a~). Per chunk of n rows with start state h (K x V), g = g_cum the gate
// summed from the chunk start, gx its row above (0 on the chunk's first row), q~ = scale q,
// gl = g of the chunk's last row, R_ijc = exp(g_ic - g_jc), Rx_ijc = exp(gx_ic - g_jc):
//   A_qk_ij = sum_c q~_ic k_jc R_ijc,  A_qa_ij = sum_c q~_ic a_jc R_ijc        (j <= i)
//   A_ba_ij = sum_c d_ic a_jc Rx_ijc,  A_bk_ij = sum_c d_ic k_jc Rx_ijc        (j < i)
//   E = (I + A_ba)^-1,  w = E (d . e^gx),  c = -E A_bk v                       (seed 001: W, C)
//   v2 = c - w h,  h' = Diag(e^gl) h + (k . e^{gl - g})^T v + (a . e^{gl - g})^T v2
//   o = (q~ . e^g) h + A_qk v + A_qa v2
// Backward of <dO, O> + <dS_T, S_T>, dh the gradient of the state after the chunk:
//   dv2 = A_qa^T dO + (a . e^{gl - g}) dh,  dh_before = Diag(e^gl) dh + (q~ . e^g)^T dO - w^T dv2
//     (chunk_delta.cu's chunk_bwd_dv_local and chunk_bwd_dhu with a in place of k)
//   dw = -dv2 h^T,  dE = -dv2 (A_bk v)^T + dw (d . e^gx)^T,  dA_ba = -(E^T dE E^T) strictly lower
//   dA_qk = dO v^T, dA_qa = dO v2^T (lower),  dA_bk = -(E^T dv2) v^T (strictly lower)
//   dv = (k . e^{gl - g}) dh + A_qk^T dO - A_bk^T E^T dv2
//   dk_ic = sum_{m>=i} dA_qk_mi q~_mc R_mic + e^{gl_c - g_ic} v_i . dh_c
//           + sum_{m>i} dA_bk_mi d_mc Rx_mic
//   da_ic = sum_{m>=i} dA_qa_mi q~_mc R_mic + e^{gl_c - g_ic} v2_i . dh_c
//           + sum_{m>i} dA_ba_mi d_mc Rx_mic
//   dd_ic = e^gx_ic (E^T dw)_ic + sum_{j<i} (dA_bk_ij k_jc + dA_ba_ij a_jc) Rx_ijc
//   dG = q~ . dq~ - k . dk - a . da + (d . dd of the row below), the last row + rowsum(h' . dh);
//   dgk = the suffix sum of dG inside each chunk; flash-linear-attention's da = -dd, db = da.
#include "detail/chunk_device.cuh" // load, store, at_k, at_v, at_state, at_score, gate,
                                   // chunk_rows, solve_tril, read_state_tile, write_state_tile,
                                   // decay_and_add, share_state_tile, decayed_to_end, check_sync,
                                   // allow_shared_memory, state_grid, with_input_type, in, out,
                                   // C, MAX_K, BV, THREADS, STATE_PER_THREAD, KS
#include "detail/dplr_launch.hpp"

namespace ruleproof::gpu::detail {

namespace {

/// dplr, the engine's a (flash-linear-attention's b) and d (its -a) of row r, head h, key c.
template <class In>
__device__ inline float engine_a(const In *b_fla, int r, int h, int c, const ChunkDims &d) {
  return load(b_fla, at_k(r, h, c, d));
}
template <class In>
__device__ inline float engine_d(const In *a_fla, int r, int h, int c, const ChunkDims &d) {
  return -load(a_fla, at_k(r, h, c, d));
}
/// d from a staged a_fla (d . e^gx from a staged a_fla . e^gx). The kernels stage
/// flash-linear-attention's a and negate it where it is used, as engine_d does, so that each sum
/// compiles as in version 1 (the compiler folds the sign into a subtraction).
__device__ inline float engine_d(float a_fla) { return -a_fla; }

/// gx: g_cum of the row above r inside its chunk (which starts at bos), 0 on the first row.
__device__ inline float gate_excl(const float *g_cum, int r, int bos, int h, int c,
                                  const ChunkDims &d) {
  const float gx = r > bos ? gate(g_cum, r - 1, h, c, d) : 0.0f;
#ifdef RULEPROOF_PLANTED_BUG // gpu_check_planted only: a deliberate bug, gx kept in bf16
  return __bfloat162float(__float2bfloat16_rn(gx));
#else
  return gx;
#endif
}

// ---------------------------------------------------------------------------------------
// dplr: chunk_dplr_fwd_intra, solve_tril, recompute_w_c: grid (NC, H), THREADS threads,
// sizeof(DplrFwdWyShared) of dynamic shared memory; one chunk of one head. The keys of the
// four scores go through shared memory KS columns at a time (q~, k, a, g, -d, gx), each thread
// keeping its pairs' four sums in registers (pair e = tid + p THREADS is row e / C, column
// e % C); then E takes their place, and the right factors of w and c go through it KS columns
// at a time.
struct DplrFwdWyShared {
  float Aba[C][C]; // A_ba, then E A_bk
  float Abk[C][C];
  union {
    struct {
      float q[C][KS + 1], k[C][KS + 1], a[C][KS + 1];      // KS key columns of q~, k, a
      float g[C][KS + 1], a_fla[C][KS + 1], gx[C][KS + 1]; // and of g, -d, gx
    } keys;
    struct {
      float E[C][C];
      float x[C][KS + 1]; // KS columns of a_fla . e^gx (-d . e^gx), then of v
    } solved;
  };
};

template <class In>
__global__ void chunk_dplr_fwd_wy_kernel(const In *q, const In *k, const In *v, const In *a_fla,
                                         const In *b_fla, const float *g_cum, float *A_qk,
                                         float *A_qa, float *A_ba, float *A_bk, float *E_out,
                                         float *w, float *c_out, DeviceChunkTable t, ChunkDims d) {
  constexpr int PAIRS = C * C / THREADS;
  extern __shared__ float4 dplr_fwd_wy_shared[];
  DplrFwdWyShared &s = *reinterpret_cast<DplrFwdWyShared *>(dplr_fwd_wy_shared);
  const int c = blockIdx.x, hd = blockIdx.y, tid = threadIdx.x;
  const ChunkRows rows = chunk_rows(t, c);
  const int n = rows.n, bos = rows.bos;
  float qk[PAIRS] = {}, qa[PAIRS] = {}, ba[PAIRS] = {}, bk[PAIRS] = {};
  for (int c0 = 0; c0 < d.K; c0 += KS) {
    __syncthreads(); // the previous slice is no longer read
    for (int e = tid; e < n * KS; e += THREADS) {
      const int row = e / KS, kc = e % KS, r = bos + row, col = c0 + kc;
      s.keys.q[row][kc] = load(q, at_k(r, hd, col, d)) * d.scale;
      s.keys.k[row][kc] = load(k, at_k(r, hd, col, d));
      s.keys.a[row][kc] = engine_a(b_fla, r, hd, col, d);
      s.keys.g[row][kc] = gate(g_cum, r, hd, col, d);
      s.keys.a_fla[row][kc] = load(a_fla, at_k(r, hd, col, d));
      s.keys.gx[row][kc] = gate_excl(g_cum, r, bos, hd, col, d);
    }
    __syncthreads();
#pragma unroll
    for (int p = 0; p < PAIRS; ++p) {
      const int e = tid + p * THREADS, i = e / C, j = e % C;
      if (i < n && j <= i)
        for (int kc = 0; kc < KS; ++kc) {
          const float q_i = s.keys.q[i][kc], k_j = s.keys.k[j][kc], a_j = s.keys.a[j][kc];
          const float r = expf(s.keys.g[i][kc] - s.keys.g[j][kc]);
          qk[p] += q_i * k_j * r;
          qa[p] += q_i * a_j * r;
          if (j < i) {
            const float x =
                engine_d(s.keys.a_fla[i][kc]) * expf(s.keys.gx[i][kc] - s.keys.g[j][kc]);
            ba[p] += x * a_j;
            bk[p] += x * k_j;
          }
        }
    }
  }
  __syncthreads(); // the key slices are no longer read: E takes their place
#pragma unroll
  for (int p = 0; p < PAIRS; ++p) {
    const int e = tid + p * THREADS, i = e / C, j = e % C;
    s.Aba[i][j] = ba[p];
    s.Abk[i][j] = bk[p];
    s.solved.E[i][j] = i == j ? 1.0f : 0.0f;
    if (i < n) {
      const long at = at_score(bos + i, hd, j, d);
      A_qk[at] = qk[p];
      A_qa[at] = qa[p];
      A_ba[at] = ba[p];
      A_bk[at] = bk[p];
    }
  }
  __syncthreads();
  solve_tril(s.Aba, s.solved.E, n); // E = (I + A_ba)^-1
  __syncthreads();
  for (int e = tid; e < n * C; e += THREADS)
    E_out[at_score(bos + e / C, hd, e % C, d)] = s.solved.E[e / C][e % C];
  for (int c0 = 0; c0 < d.K; c0 += KS) { // w = E (d . e^gx)
    __syncthreads();
    for (int e = tid; e < n * KS; e += THREADS) {
      const int m = e / KS, kc = e % KS;
      s.solved.x[m][kc] = load(a_fla, at_k(bos + m, hd, c0 + kc, d)) *
                          expf(gate_excl(g_cum, bos + m, bos, hd, c0 + kc, d));
    }
    __syncthreads();
    for (int e = tid; e < n * KS; e += THREADS) {
      const int i = e / KS, kc = e % KS;
      float acc = 0;
      for (int m = 0; m <= i; ++m)
        acc += s.solved.E[i][m] * engine_d(s.solved.x[m][kc]);
      w[at_k(bos + i, hd, c0 + kc, d)] = acc;
    }
  }
  for (int e = tid; e < C * C; e += THREADS) { // E A_bk (strictly lower), into Aba
    const int i = e / C, j = e % C;
    float acc = 0;
    for (int m = j + 1; m <= i && m < n; ++m)
      acc += s.solved.E[i][m] * s.Abk[m][j];
    s.Aba[i][j] = acc;
  }
  for (int c0 = 0; c0 < d.V; c0 += KS) { // c = -(E A_bk) v
    __syncthreads();                     // E A_bk is complete; the previous slice is no longer read
    for (int e = tid; e < n * KS; e += THREADS) {
      const int m = e / KS, jv = e % KS;
      s.solved.x[m][jv] = load(v, at_v(bos + m, hd, c0 + jv, d));
    }
    __syncthreads();
    for (int e = tid; e < n * KS; e += THREADS) {
      const int i = e / KS, jv = e % KS;
      float acc = 0;
      for (int m = 0; m < i; ++m)
        acc += s.Aba[i][m] * s.solved.x[m][jv];
      c_out[at_v(bos + i, hd, c0 + jv, d)] = -acc;
    }
  }
}

// ---------------------------------------------------------------------------------------
// dplr: chunk_dplr_fwd_h: grid (N, H, V / BV), THREADS threads, sizeof(DplrFwdHShared) of
// dynamic shared memory; the block walks its sequence's chunks in order, keeping K x BV entries
// of the state in registers (entry e = tid + m THREADS is row e / BV, column e % BV of the
// tile), as chunk_delta.cu's chunk_delta_fwd_h does, and a copy of them in shared memory for
// v2, beside the chunk's rows of w. The decayed rows k . e^{gl - g}, then a . e^{gl - g}, take
// turns in one tile (detail/chunk_device.cuh: read_state_tile, write_state_tile,
// decay_and_add).
struct DplrFwdHShared {
  float decayed[C][MAX_K]; // k . e^{gl - g}, then a . e^{gl - g}
  float w[C][MAX_K];
  float h[MAX_K][BV]; // the state at the chunk's start, the block's value columns
  float v[C][BV], v2[C][BV];
};

template <class In>
__global__ void chunk_dplr_fwd_h_kernel(const In *k, const In *v, const In *b_fla, const float *w,
                                        const float *c_in, const float *g_cum, const float *h0,
                                        float *h, float *v2, float *ht, DeviceChunkTable t,
                                        ChunkDims d) {
  extern __shared__ float4 dplr_fwd_h_shared[];
  DplrFwdHShared &s = *reinterpret_cast<DplrFwdHShared *>(dplr_fwd_h_shared);
  const int n = blockIdx.x, hd = blockIdx.y, v0 = blockIdx.z * BV, tid = threadIdx.x;
  const int entries = d.K * BV;
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
      s.decayed[r][col] = decayed_to_end(k, g_cum, rows.bos + r, last, hd, col, d);
    }
    __syncthreads();
    for (int e = tid; e < rows.n * BV; e += THREADS) { // v2 = c - w h
      const int r = e / BV, j = e % BV;
      float wh = 0;
      for (int i = 0; i < d.K; ++i)
        wh += s.w[r][i] * s.h[i][j];
      const float x = c_in[at_v(rows.bos + r, hd, v0 + j, d)] - wh;
      s.v2[r][j] = x;
      v2[at_v(rows.bos + r, hd, v0 + j, d)] = x;
      s.v[r][j] = load(v, at_v(rows.bos + r, hd, v0 + j, d));
    }
    __syncthreads();
    // Diag(e^gl) h + (k . e^{gl - g})^T v
    decay_and_add(state, s.decayed, s.v, rows.n, g_cum, last, hd, d);
    __syncthreads(); // every thread is done with the decayed keys
    for (int e = tid; e < rows.n * d.K; e += THREADS) {
      const int r = e / d.K, col = e % d.K;
      s.decayed[r][col] = decayed_to_end(b_fla, g_cum, rows.bos + r, last, hd, col, d); // a
    }
    __syncthreads();
#pragma unroll
    for (int m = 0; m < STATE_PER_THREAD; ++m) { // + (a . e^{gl - g})^T v2
      const int e = tid + m * THREADS, i = e / BV, j = e % BV;
      if (e < entries) {
        float av2 = 0;
        for (int r = 0; r < rows.n; ++r)
          av2 += s.decayed[r][i] * s.v2[r][j];
        state[m] += av2;
      }
    }
  }
  write_state_tile(state, ht, n, hd, v0, d);
}

// ---------------------------------------------------------------------------------------
// dplr: chunk_dplr_fwd_o: grid (NC, H), THREADS threads, sizeof(DplrFwdOShared) of dynamic
// shared memory; one chunk of one head, the scores read back from the stages A_qk, A_qa. Each
// thread keeps its outputs' sums in registers (output e = tid + m THREADS is row e / V, column
// e % V) while q~ . e^g and the state's rows go through shared memory KS keys at a time; then
// the chunk's scores, v and v2 are staged whole.
struct DplrFwdOShared {
  union {
    struct {
      float q[C][KS];     // KS key columns of q~ . e^g
      float h[KS][MAX_K]; // and the state's rows of those keys
    } keys;
    struct {
      float A_qk[C][C], A_qa[C][C];
      float v[C][MAX_K], v2[C][MAX_K];
    } values;
  };
};

template <class In>
__global__ void chunk_dplr_fwd_o_kernel(const In *q, const In *v, const float *g_cum,
                                        const float *A_qk, const float *A_qa, const float *h,
                                        const float *v2, In *o, DeviceChunkTable t, ChunkDims d) {
  constexpr int OUTS = C * MAX_K / THREADS;
  extern __shared__ float4 dplr_fwd_o_shared[];
  DplrFwdOShared &s = *reinterpret_cast<DplrFwdOShared *>(dplr_fwd_o_shared);
  const int c = blockIdx.x, hd = blockIdx.y, tid = threadIdx.x;
  const ChunkRows rows = chunk_rows(t, c);
  const int n = rows.n, bos = rows.bos;
  float acc[OUTS] = {};
  for (int c0 = 0; c0 < d.K; c0 += KS) { // (q~ . e^g) h: the state carried in
    __syncthreads();                     // the previous slice is no longer read
    for (int e = tid; e < n * KS; e += THREADS) {
      const int r = e / KS, kc = e % KS;
      s.keys.q[r][kc] = (load(q, at_k(bos + r, hd, c0 + kc, d)) * d.scale) *
                        expf(gate(g_cum, bos + r, hd, c0 + kc, d));
    }
    for (int e = tid; e < KS * d.V; e += THREADS) {
      const int kc = e / d.V, jv = e % d.V;
      s.keys.h[kc][jv] = h[at_state(c, hd, c0 + kc, jv, d)];
    }
    __syncthreads();
#pragma unroll
    for (int m = 0; m < OUTS; ++m) {
      const int e = tid + m * THREADS, i = e / d.V, jv = e % d.V;
      if (i < n)
        for (int kc = 0; kc < KS; ++kc)
          acc[m] += s.keys.q[i][kc] * s.keys.h[kc][jv];
    }
  }
  __syncthreads(); // the key slices are no longer read
  for (int e = tid; e < n * C; e += THREADS) {
    const int i = e / C, j = e % C;
    s.values.A_qk[i][j] = A_qk[at_score(bos + i, hd, j, d)];
    s.values.A_qa[i][j] = A_qa[at_score(bos + i, hd, j, d)];
  }
  for (int e = tid; e < n * d.V; e += THREADS) {
    const int r = e / d.V, jv = e % d.V;
    s.values.v[r][jv] = load(v, at_v(bos + r, hd, jv, d));
    s.values.v2[r][jv] = v2[at_v(bos + r, hd, jv, d)];
  }
  __syncthreads();
#pragma unroll
  for (int m = 0; m < OUTS; ++m) { // A_qk v + A_qa v2: inside the chunk
    const int e = tid + m * THREADS, i = e / d.V, jv = e % d.V;
    if (i < n) {
      for (int j = 0; j <= i; ++j)
        acc[m] +=
            s.values.A_qk[i][j] * s.values.v[j][jv] + s.values.A_qa[i][j] * s.values.v2[j][jv];
      store(o, at_v(bos + i, hd, jv, d), acc[m]);
    }
  }
}

// ---------------------------------------------------------------------------------------
// dplr: the WY part of the backward: grid (NC, H), THREADS threads, sizeof(DplrBwdWyShared) of
// dynamic shared memory; one chunk of one head. The sums over the values (dv2 v^T, dv2 h^T,
// E^T dv2) go through shared memory KS value columns at a time, each thread keeping its pairs'
// and its dw entries' sums in registers (dw entry e = tid + m THREADS is row e / K, key e % K);
// then dw and -d . e^gx go KS key columns at a time for dE, E and A_bk staged whole beside
// them.
struct DplrBwdWyShared {
  float E[C][C + 1]; // padded: read down its columns and along its rows
  float T[C][C];     // dv2 v^T, then E^T dE
  float dE[C][C];
  float Abk[C][C + 1];
  union {
    struct {
      float dv2[C][KS + 1], v[C][KS + 1]; // KS value columns of the chunk's dv2 and v
      float h[MAX_K][KS + 1];             // and of the state's rows
    } values;
    struct {
      float dw[C][KS + 1], a_gated[C][KS + 1]; // KS key columns of dw and a_fla . e^gx
    } keys;
  };
};

template <class In>
__global__ void chunk_dplr_bwd_wy_kernel(const In *a_fla, const In *v, const float *g_cum,
                                         const float *A_bk, const float *E_stage, const float *h,
                                         const float *dv2, float *dw, float *Et_dv2, float *dA_ba,
                                         DeviceChunkTable t, ChunkDims d) {
  constexpr int PAIRS = C * C / THREADS, OUTS = C * MAX_K / THREADS;
  extern __shared__ float4 dplr_bwd_wy_shared[];
  DplrBwdWyShared &s = *reinterpret_cast<DplrBwdWyShared *>(dplr_bwd_wy_shared);
  const int c = blockIdx.x, hd = blockIdx.y, tid = threadIdx.x;
  const ChunkRows rows = chunk_rows(t, c);
  const int n = rows.n, bos = rows.bos;
  for (int e = tid; e < C * C; e += THREADS) {
    const int i = e / C, j = e % C;
    s.E[i][j] = i < n ? E_stage[at_score(bos + i, hd, j, d)] : 0.0f;
    s.Abk[i][j] = i < n ? A_bk[at_score(bos + i, hd, j, d)] : 0.0f;
  }
  float dv2_v[PAIRS] = {}; // (dv2 v^T)_ij
  float dv2_h[OUTS] = {};  // (dv2 h^T)_i,col
  for (int c0 = 0; c0 < d.V; c0 += KS) {
    __syncthreads(); // E is staged; the previous slice is no longer read
    for (int e = tid; e < n * KS; e += THREADS) {
      const int r = e / KS, jv = e % KS;
      s.values.dv2[r][jv] = dv2[at_v(bos + r, hd, c0 + jv, d)];
      s.values.v[r][jv] = load(v, at_v(bos + r, hd, c0 + jv, d));
    }
    for (int e = tid; e < d.K * KS; e += THREADS) {
      const int kc = e / KS, jv = e % KS;
      s.values.h[kc][jv] = h[at_state(c, hd, kc, c0 + jv, d)];
    }
    __syncthreads();
#pragma unroll
    for (int p = 0; p < PAIRS; ++p) {
      const int e = tid + p * THREADS, i = e / C, j = e % C;
      if (i < n && j < n)
        for (int jv = 0; jv < KS; ++jv)
          dv2_v[p] += s.values.dv2[i][jv] * s.values.v[j][jv];
    }
#pragma unroll
    for (int m = 0; m < OUTS; ++m) {
      const int e = tid + m * THREADS, i = e / d.K, col = e % d.K;
      if (i < n)
        for (int jv = 0; jv < KS; ++jv)
          dv2_h[m] += s.values.dv2[i][jv] * s.values.h[col][jv];
    }
    for (int e = tid; e < n * KS; e += THREADS) { // E^T dv2
      const int i = e / KS, jv = e % KS;
      float x = 0;
      for (int m = i; m < n; ++m)
        x += s.E[m][i] * s.values.dv2[m][jv];
      Et_dv2[at_v(bos + i, hd, c0 + jv, d)] = x;
    }
  }
#pragma unroll
  for (int p = 0; p < PAIRS; ++p)
    s.T[(tid + p * THREADS) / C][(tid + p * THREADS) % C] = dv2_v[p];
#pragma unroll
  for (int m = 0; m < OUTS; ++m) { // dw = -dv2 h^T
    const int e = tid + m * THREADS, i = e / d.K, col = e % d.K;
    if (i < n)
      dw[at_k(bos + i, hd, col, d)] = -dv2_h[m];
  }
  // dE = -dv2 (A_bk v)^T + dw (d . e^gx)^T, strictly lower (the rest does not reach A_ba)
  float from_w[PAIRS] = {};
  for (int c0 = 0; c0 < d.K; c0 += KS) {
    __syncthreads(); // dw and T are visible to the block; the previous slice is no longer read
    for (int e = tid; e < n * KS; e += THREADS) {
      const int r = e / KS, kc = e % KS;
      s.keys.dw[r][kc] = dw[at_k(bos + r, hd, c0 + kc, d)];
      s.keys.a_gated[r][kc] = load(a_fla, at_k(bos + r, hd, c0 + kc, d)) *
                              expf(gate_excl(g_cum, bos + r, bos, hd, c0 + kc, d));
    }
    __syncthreads();
#pragma unroll
    for (int p = 0; p < PAIRS; ++p) {
      const int e = tid + p * THREADS, i = e / C, j = e % C;
      if (i < n && j < i)
        for (int kc = 0; kc < KS; ++kc)
          from_w[p] += s.keys.dw[i][kc] * engine_d(s.keys.a_gated[j][kc]);
    }
  }
#pragma unroll
  for (int p = 0; p < PAIRS; ++p) {
    const int e = tid + p * THREADS, i = e / C, j = e % C;
    float x = 0;
    if (i < n && j < i) {
      float from_c = 0;
      for (int m = 0; m < j; ++m)
        from_c += s.T[i][m] * s.Abk[j][m];
      x = from_w[p] - from_c;
    }
    s.dE[i][j] = x;
  }
  __syncthreads();
  for (int e = tid; e < C * C; e += THREADS) { // T = E^T dE
    const int i = e / C, j = e % C;
    float x = 0;
    if (i < n && j < n)
      for (int m = max(i, j + 1); m < n; ++m)
        x += s.E[m][i] * s.dE[m][j];
    s.T[i][j] = x;
  }
  __syncthreads();
  for (int e = tid; e < n * C; e += THREADS) { // dA_ba = -(T E^T), strictly lower
    const int i = e / C, j = e % C;
    float x = 0;
    if (j < i)
      for (int m = 0; m <= j; ++m)
        x += s.T[i][m] * s.E[j][m];
    dA_ba[at_score(bos + i, hd, j, d)] = -x;
  }
}

// ---------------------------------------------------------------------------------------
// dplr: dq, dk, dv, da, db and the gate: grid (NC, H), THREADS threads, sizeof(DplrBwdDqkShared)
// of dynamic shared memory; one chunk of one head. The sums over the values that make dA_qk,
// dA_qa and dA_bk go through shared memory KS value columns at a time, each thread keeping its
// pairs' sums in registers. Then the keys go KS columns at a time, each thread taking one key
// column (tid % KS) of the rows tid / KS + p THREADS / KS: first its rows' sums over the values
// (dO . h, v . dh, v2 . dh; KS value columns at a time again, in registers), then the sums over
// rows, with the slice's q~, k, a, -d, g, gx and dw staged beside the chunk's dA and E. The term
// d . dd that the gate takes one row up goes through d_dd. dv last, KS value columns at a time.
struct DplrBwdDqkShared {
  float dA_qk[C][C], dA_qa[C][C], dA_bk[C][C], dA_ba[C][C];
  float E[C][C];
  union {
    struct {
      float d_o[C][KS + 1], v[C][KS + 1], v2[C][KS + 1], Et_dv2[C][KS + 1];
    } values; // KS value columns of the chunk's rows, for the dA
    struct {
      float d_o[C][KS + 1], v[C][KS + 1], v2[C][KS + 1]; // KS value columns of the chunk's rows
      float h[KS][KS + 1], dh[KS][KS + 1];               // and of the key slice's rows of h, dh
    } row_values;                                        // for the rows' sums over the values
    struct {
      float q[C][KS], k[C][KS], a[C][KS], a_fla[C][KS], g[C][KS], gx[C][KS], dw[C][KS];
    } keys; // KS key columns of the chunk's rows
    struct {
      float A_qk[C][C], A_bk[C][C];
      float k_decayed[C][MAX_K]; // k . e^{gl - g}
      float dh[MAX_K][KS], d_o[C][KS], Et_dv2[C][KS];
    } dv;
  };
};

template <class In>
__global__ void
chunk_dplr_bwd_dqk_kernel(const In *q, const In *k, const In *v, const In *a_fla, const In *b_fla,
                          const float *g_cum, const float *A_qk, const float *A_bk, const float *E,
                          const float *h, const float *ht, const float *v2, const In *d_o,
                          const float *dh, const float *dw, const float *Et_dv2, const float *dA_ba,
                          In *dq, In *dk, In *dv, In *da_fla, In *db_fla, float *dG, float *d_dd,
                          DeviceChunkTable t, ChunkDims d) {
  constexpr int PAIRS = C * C / THREADS, ROWS = C * KS / THREADS, row_step = THREADS / KS;
  extern __shared__ float4 dplr_bwd_dqk_shared[];
  DplrBwdDqkShared &s = *reinterpret_cast<DplrBwdDqkShared *>(dplr_bwd_dqk_shared);
  const int c = blockIdx.x, hd = blockIdx.y, tid = threadIdx.x;
  const ChunkRows rows = chunk_rows(t, c);
  const int n = rows.n, bos = rows.bos, last = bos + n - 1;
  for (int e = tid; e < C * C; e += THREADS) {
    const int i = e / C, j = e % C;
    s.dA_ba[i][j] = i < n ? dA_ba[at_score(bos + i, hd, j, d)] : 0.0f;
    s.E[i][j] = i < n ? E[at_score(bos + i, hd, j, d)] : 0.0f;
  }
  // dA_qk = dO v^T, dA_qa = dO v2^T (lower), dA_bk = -(E^T dv2) v^T (strictly lower)
  float x_qk[PAIRS] = {}, x_qa[PAIRS] = {}, x_bk[PAIRS] = {};
  for (int v0 = 0; v0 < d.V; v0 += KS) {
    __syncthreads(); // the previous slice is no longer read
    for (int e = tid; e < n * KS; e += THREADS) {
      const int r = e / KS, jv = e % KS;
      const long at = at_v(bos + r, hd, v0 + jv, d);
      s.values.d_o[r][jv] = load(d_o, at);
      s.values.v[r][jv] = load(v, at);
      s.values.v2[r][jv] = v2[at];
      s.values.Et_dv2[r][jv] = Et_dv2[at];
    }
    __syncthreads();
#pragma unroll
    for (int p = 0; p < PAIRS; ++p) {
      const int e = tid + p * THREADS, i = e / C, j = e % C;
      if (i < n && j <= i)
        for (int jv = 0; jv < KS; ++jv) {
          const float do_i = s.values.d_o[i][jv];
          x_qk[p] += do_i * s.values.v[j][jv];
          x_qa[p] += do_i * s.values.v2[j][jv];
          if (j < i)
            x_bk[p] += s.values.Et_dv2[i][jv] * s.values.v[j][jv];
        }
    }
  }
#pragma unroll
  for (int p = 0; p < PAIRS; ++p) {
    const int e = tid + p * THREADS, i = e / C, j = e % C;
    s.dA_qk[i][j] = x_qk[p];
    s.dA_qa[i][j] = x_qa[p];
    s.dA_bk[i][j] = -x_bk[p];
  }
  const int sc = tid % KS; // the thread's key column of each slice
  for (int c0 = 0; c0 < d.K; c0 += KS) {
    const int col = c0 + sc;
    // dO_i . h_col, v_i . dh_col, v2_i . dh_col
    float do_h[ROWS] = {}, v_dh[ROWS] = {}, v2_dh[ROWS] = {};
    for (int v0 = 0; v0 < d.V; v0 += KS) {
      __syncthreads(); // the dA are visible to the block; the previous slice is no longer read
      for (int e = tid; e < n * KS; e += THREADS) {
        const int r = e / KS, jv = e % KS;
        const long at = at_v(bos + r, hd, v0 + jv, d);
        s.row_values.d_o[r][jv] = load(d_o, at);
        s.row_values.v[r][jv] = load(v, at);
        s.row_values.v2[r][jv] = v2[at];
      }
      for (int e = tid; e < KS * KS; e += THREADS) {
        const int i = e / KS, jv = e % KS;
        s.row_values.h[i][jv] = h[at_state(c, hd, c0 + i, v0 + jv, d)];
        s.row_values.dh[i][jv] = dh[at_state(c, hd, c0 + i, v0 + jv, d)];
      }
      __syncthreads();
#pragma unroll
      for (int p = 0; p < ROWS; ++p) {
        const int i = tid / KS + p * row_step;
        if (i < n)
          for (int jv = 0; jv < KS; ++jv) {
            const float dh_cj = s.row_values.dh[sc][jv];
            do_h[p] += s.row_values.d_o[i][jv] * s.row_values.h[sc][jv];
            v_dh[p] += s.row_values.v[i][jv] * dh_cj;
            v2_dh[p] += s.row_values.v2[i][jv] * dh_cj;
          }
      }
    }
    __syncthreads(); // the value slices are no longer read
    for (int e = tid; e < n * KS; e += THREADS) {
      const int row = e / KS, kc = e % KS, r = bos + row;
      const long at = at_k(r, hd, c0 + kc, d);
      s.keys.q[row][kc] = load(q, at) * d.scale;
      s.keys.k[row][kc] = load(k, at);
      s.keys.a[row][kc] = engine_a(b_fla, r, hd, c0 + kc, d);
      s.keys.a_fla[row][kc] = load(a_fla, at);
      s.keys.g[row][kc] = gate(g_cum, r, hd, c0 + kc, d);
      s.keys.gx[row][kc] = gate_excl(g_cum, r, bos, hd, c0 + kc, d);
      s.keys.dw[row][kc] = dw[at];
    }
    __syncthreads();
    const float gl = gate(g_cum, last, hd, col, d);
#pragma unroll
    for (int p = 0; p < ROWS; ++p) {
      const int i = tid / KS + p * row_step;
      if (i < n) {
        const long at = at_k(bos + i, hd, col, d);
        const float g_i = s.keys.g[i][sc], gx_i = s.keys.gx[i][sc];
        float in_k = 0, in_a = 0; // sum_{j<=i} dA_qk_ij k_jc R_ijc, dA_qa_ij a_jc R_ijc
        for (int j = 0; j <= i; ++j) {
          const float R = expf(g_i - s.keys.g[j][sc]);
          in_k += s.dA_qk[i][j] * s.keys.k[j][sc] * R;
          in_a += s.dA_qa[i][j] * s.keys.a[j][sc] * R;
        }
        float dk_o = 0, da_o = 0; // sum_{m>=i} dA_qk_mi q~_mc R_mic, dA_qa_mi q~_mc R_mic
        for (int m = i; m < n; ++m) {
          const float qR = s.keys.q[m][sc] * expf(s.keys.g[m][sc] - g_i);
          dk_o += s.dA_qk[m][i] * qR;
          da_o += s.dA_qa[m][i] * qR;
        }
        float dk_b = 0, da_b = 0; // sum_{m>i} dA_bk_mi d_mc Rx_mic, dA_ba_mi d_mc Rx_mic
        for (int m = i + 1; m < n; ++m) {
          const float dR = engine_d(s.keys.a_fla[m][sc]) * expf(s.keys.gx[m][sc] - g_i);
          dk_b += s.dA_bk[m][i] * dR;
          da_b += s.dA_ba[m][i] * dR;
        }
        float et_dw = 0; // (E^T dw)_ic
        for (int m = i; m < n; ++m)
          et_dw += s.E[m][i] * s.keys.dw[m][sc];
        float dd_k = 0, dd_a = 0; // sum_{j<i} dA_bk_ij k_jc Rx_ijc, dA_ba_ij a_jc Rx_ijc
        for (int j = 0; j < i; ++j) {
          const float Rx = expf(gx_i - s.keys.g[j][sc]);
          dd_k += s.dA_bk[i][j] * s.keys.k[j][sc] * Rx;
          dd_a += s.dA_ba[i][j] * s.keys.a[j][sc] * Rx;
        }
        const float to_end = expf(gl - g_i);
        const float dq_tilde = (expf(g_i) * do_h[p] + in_k) + in_a;
        const float dk_i = (dk_o + to_end * v_dh[p]) + dk_b;
        const float da_i = (da_o + to_end * v2_dh[p]) + da_b;
        const float dd_i = (expf(gx_i) * et_dw + dd_k) + dd_a;
        const float q_i = s.keys.q[i][sc], k_i = s.keys.k[i][sc];
        const float a_i = s.keys.a[i][sc], d_i = engine_d(s.keys.a_fla[i][sc]);
        store(dq, at, d.scale * dq_tilde);
        store(dk, at, dk_i);
        store(db_fla, at, da_i);  // flash-linear-attention's b is the engine's a
        store(da_fla, at, -dd_i); // and its a is -d
        dG[at] = (q_i * dq_tilde - k_i * dk_i) - a_i * da_i;
        d_dd[at] = d_i * dd_i;
      }
    }
  }
  __syncthreads(); // every row's d . dd is visible to the block; the key slices are not read
  const int seq = t.chunk_seq[c];
  const float *h_end = c + 1 < t.seq_first_chunk[seq + 1] ? h + at_state(c + 1, hd, 0, 0, d)
                                                          : ht + at_state(seq, hd, 0, 0, d);
  const int col = tid % d.K;
  for (int i = tid / d.K; i < n; i += THREADS / d.K) {
    const long at = at_k(bos + i, hd, col, d);
    float x = dG[at];
    if (i + 1 < n) // d's decay is the exclusive one: its term sits one row up
      x += d_dd[at_k(bos + i + 1, hd, col, d)];
    if (i == n - 1) { // rowsum(h' . dh), h' the state after the chunk
      float h_dh = 0;
      for (int jv = 0; jv < d.V; ++jv)
        h_dh += h_end[col * d.V + jv] * dh[at_state(c, hd, col, jv, d)];
      x += h_dh;
    }
    dG[at] = x;
  }
  // dv = (k . e^{gl - g}) dh + A_qk^T dO - A_bk^T E^T dv2
  for (int e = tid; e < n * C; e += THREADS) {
    const int i = e / C, j = e % C;
    s.dv.A_qk[i][j] = A_qk[at_score(bos + i, hd, j, d)];
    s.dv.A_bk[i][j] = A_bk[at_score(bos + i, hd, j, d)];
  }
  for (int e = tid; e < n * d.K; e += THREADS) {
    const int r = e / d.K, kc = e % d.K;
    s.dv.k_decayed[r][kc] = load(k, at_k(bos + r, hd, kc, d)) *
                            expf(gate(g_cum, last, hd, kc, d) - gate(g_cum, bos + r, hd, kc, d));
  }
  for (int v0 = 0; v0 < d.V; v0 += KS) {
    __syncthreads(); // the chunk's rows are staged; the previous slice is no longer read
    for (int e = tid; e < d.K * KS; e += THREADS) {
      const int kc = e / KS, jv = e % KS;
      s.dv.dh[kc][jv] = dh[at_state(c, hd, kc, v0 + jv, d)];
    }
    for (int e = tid; e < n * KS; e += THREADS) {
      const int r = e / KS, jv = e % KS;
      const long at = at_v(bos + r, hd, v0 + jv, d);
      s.dv.d_o[r][jv] = load(d_o, at);
      s.dv.Et_dv2[r][jv] = Et_dv2[at];
    }
    __syncthreads();
    for (int e = tid; e < n * KS; e += THREADS) {
      const int j = e / KS, jv = e % KS;
      float from_state = 0, from_qk = 0, from_bk = 0;
      for (int kc = 0; kc < d.K; ++kc)
        from_state += s.dv.k_decayed[j][kc] * s.dv.dh[kc][jv];
      for (int i = j; i < n; ++i)
        from_qk += s.dv.A_qk[i][j] * s.dv.d_o[i][jv];
      for (int i = j + 1; i < n; ++i)
        from_bk += s.dv.A_bk[i][j] * s.dv.Et_dv2[i][jv];
      store(dv, at_v(bos + j, hd, v0 + jv, d), (from_state + from_qk) - from_bk);
    }
  }
}

} // namespace

void launch_chunk_dplr_fwd_wy(const void *q, const void *k, const void *v, const void *a,
                              const void *b, const float *g_cum, float *A_qk, float *A_qa,
                              float *A_ba, float *A_bk, float *E, float *w, float *c,
                              const DeviceChunkTable &t, const ChunkDims &d) {
  if (t.NC == 0)
    return;
  const int bytes = static_cast<int>(sizeof(DplrFwdWyShared));
  with_input_type(d, [&](auto x) {
    using In = decltype(x);
    allow_shared_memory(chunk_dplr_fwd_wy_kernel<In>, bytes, "chunk_dplr_fwd_wy_kernel");
    chunk_dplr_fwd_wy_kernel<<<dim3(t.NC, d.H), THREADS, bytes>>>(in<In>(q), in<In>(k), in<In>(v),
                                                                  in<In>(a), in<In>(b), g_cum, A_qk,
                                                                  A_qa, A_ba, A_bk, E, w, c, t, d);
  });
  check_sync("chunk_dplr_fwd_wy_kernel");
}

void launch_chunk_dplr_fwd_h(const void *k, const void *v, const void *b, const float *w,
                             const float *c, const float *g_cum, const float *h0, float *h,
                             float *v2, float *ht, const DeviceChunkTable &t, const ChunkDims &d) {
  if (t.N == 0)
    return;
  const int bytes = static_cast<int>(sizeof(DplrFwdHShared));
  with_input_type(d, [&](auto x) {
    using In = decltype(x);
    allow_shared_memory(chunk_dplr_fwd_h_kernel<In>, bytes, "chunk_dplr_fwd_h_kernel");
    chunk_dplr_fwd_h_kernel<<<state_grid(t, d), THREADS, bytes>>>(in<In>(k), in<In>(v), in<In>(b),
                                                                  w, c, g_cum, h0, h, v2, ht, t, d);
  });
  check_sync("chunk_dplr_fwd_h_kernel");
}

void launch_chunk_dplr_fwd_o(const void *q, const void *v, const float *g_cum, const float *A_qk,
                             const float *A_qa, const float *h, const float *v2, void *o,
                             const DeviceChunkTable &t, const ChunkDims &d) {
  if (t.NC == 0)
    return;
  const int bytes = static_cast<int>(sizeof(DplrFwdOShared));
  with_input_type(d, [&](auto x) {
    using In = decltype(x);
    allow_shared_memory(chunk_dplr_fwd_o_kernel<In>, bytes, "chunk_dplr_fwd_o_kernel");
    chunk_dplr_fwd_o_kernel<<<dim3(t.NC, d.H), THREADS, bytes>>>(in<In>(q), in<In>(v), g_cum, A_qk,
                                                                 A_qa, h, v2, out<In>(o), t, d);
  });
  check_sync("chunk_dplr_fwd_o_kernel");
}

void launch_chunk_dplr_bwd_wy(const void *a, const void *v, const float *g_cum, const float *A_bk,
                              const float *E, const float *h, const float *dv2, float *dw,
                              float *Et_dv2, float *dA_ba, const DeviceChunkTable &t,
                              const ChunkDims &d) {
  if (t.NC == 0)
    return;
  const int bytes = static_cast<int>(sizeof(DplrBwdWyShared));
  with_input_type(d, [&](auto x) {
    using In = decltype(x);
    allow_shared_memory(chunk_dplr_bwd_wy_kernel<In>, bytes, "chunk_dplr_bwd_wy_kernel");
    chunk_dplr_bwd_wy_kernel<<<dim3(t.NC, d.H), THREADS, bytes>>>(
        in<In>(a), in<In>(v), g_cum, A_bk, E, h, dv2, dw, Et_dv2, dA_ba, t, d);
  });
  check_sync("chunk_dplr_bwd_wy_kernel");
}

void launch_chunk_dplr_bwd_dqk(const void *q, const void *k, const void *v, const void *a,
                               const void *b, const float *g_cum, const float *A_qk,
                               const float *A_bk, const float *E, const float *h, const float *ht,
                               const float *v2, const void *d_o, const float *dh, const float *dw,
                               const float *Et_dv2, const float *dA_ba, void *dq, void *dk,
                               void *dv, void *da, void *db, float *dG, float *d_dd,
                               const DeviceChunkTable &t, const ChunkDims &d) {
  if (t.NC == 0)
    return;
  const int bytes = static_cast<int>(sizeof(DplrBwdDqkShared));
  with_input_type(d, [&](auto x) {
    using In = decltype(x);
    allow_shared_memory(chunk_dplr_bwd_dqk_kernel<In>, bytes, "chunk_dplr_bwd_dqk_kernel");
    chunk_dplr_bwd_dqk_kernel<<<dim3(t.NC, d.H), THREADS, bytes>>>(
        in<In>(q), in<In>(k), in<In>(v), in<In>(a), in<In>(b), g_cum, A_qk, A_bk, E, h, ht, v2,
        in<In>(d_o), dh, dw, Et_dv2, dA_ba, out<In>(dq), out<In>(dk), out<In>(dv), out<In>(da),
        out<In>(db), dG, d_dd, t, d);
  });
  check_sync("chunk_dplr_bwd_dqk_kernel");
}

} // namespace ruleproof::gpu::detail
