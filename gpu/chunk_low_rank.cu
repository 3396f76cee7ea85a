// ruleproof: chunkwise low-rank kernels, forward and backward, on Hopper (sm_90): dplr in
// flash-linear-attention's parameterisation (per-key gate gk, the pair a, b) and gated_oja
// (per-value gate, beta). Inputs bf16 or fp16; gates, beta, states, every intermediate and
// every sum in fp32; outputs o, dq, dk, dv, da, db stored in the input type, everything else
// fp32. Chunk size C = 64.
//
// CPU references, one grep away: reference/dplr/chunk.hpp (chunk_dplr_fwd_intra, solve_tril,
// recompute_w_c, chunk_dplr_fwd_h, chunk_dplr_fwd_o, chunk_dplr_bwd_dhu, chunk_backward_head;
// seed 001's WY form and its "Gated DPLR Backward", transposed), reference/dplr/dplr.hpp
// (as_core, from_core: Parameterisation::fla), reference/gated_oja/chunk.hpp and
// reference/gated_oja/BACKWARD.md (seed 000, section 1.3); what both share,
// reference/low_rank/chunk.hpp. The emulated twin is gpu/twin.hpp; the host API with its shape
// checks gpu/chunk_low_rank.hpp.
//
// Compile: part of the ruleproof_gpu library (nvcc -arch=sm_90, C++17), or by hand:
//   nvcc -std=c++17 -gencode=arch=compute_90,code=sm_90 -I. -c gpu/chunk_low_rank.cu
//
// Versions:
//   1. readable first, as chunk_delta.cu's version 1: one block per (chunk, head) or
//      (sequence, head, value tile), fp32 CUDA-core arithmetic, every decay exp(g_cum_i -
//      g_cum_j) taken pairwise (exponents <= 0), the triangular solve one column a thread
//      (detail/chunk_device.cuh, solve_tril). No tensor cores.
//   2. (this one) the same arithmetic in the same order, with chunk_oja_fwd_o's operands staged
//      in shared memory, as chunk_delta.cu's version 2 stages its own.
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
//   dq~_ic = e^g_ic dO_i . h_c + sum_{j<=i} (dA_qk_ij k_jc + dA_qa_ij a_jc) R_ijc
//   dk_ic = sum_{m>=i} dA_qk_mi q~_mc R_mic + e^{gl_c - g_ic} v_i . dh_c + sum_{m>i} dA_bk_mi d_mc
//   Rx_mic da_ic = sum_{m>=i} dA_qa_mi q~_mc R_mic + e^{gl_c - g_ic} v2_i . dh_c + sum_{m>i}
//   dA_ba_mi d_mc Rx_mic dd_ic = e^gx_ic (E^T dw)_ic + sum_{j<i} (dA_bk_ij k_jc + dA_ba_ij a_jc)
//   Rx_ijc dG = q~ . dq~ - k . dk - a . da + (d . dd of the row below), the last row + rowsum(h' .
//   dh); dgk = the suffix sum of dG inside each chunk; flash-linear-attention's da = -dd, db = da.
//
// gated_oja. S_t = S_{t-1} A_t (I - beta_t v_t v_t^T) + beta_t k_t v_t^T, o_t = S_t^T q~_t, is kda
// with keys and values exchanged: S'_t = S_t^T follows kda's recurrence with k' = v, v' = k and
// the per-value gate as kda's per-key gate. So its forward stages are chunk_delta.cu's
// (chunk_wy_fwd: A0, A, w = A Diag(beta) (v . e^g), u = A Diag(beta) k; chunk_delta_fwd_h: the
// state h' = h^T [NC, H, V, K] and k_new = u - w h^T in place of v_new), and only its output is
// its own (reference/gated_oja/chunk.hpp, chunk_oja_fwd_o):
//   P = q~ k_new^T (lower),  o_rc = e^g_rc (q~_r . h_c) + sum_{i<=r} P_ri v_ic R_ric
// Its backward is kda's, exactly: with O'_t = S'_t^T (scale dO_t),
//   <dO, O> + <dS_T, S_T> = sum_t <q_t, O'_t> + <dS_T^T, S'_T>,
// the loss of kda run on q' = dO, k' = v, v' = k, h0' = h0^T with upstream gradients dO' = q,
// dS'_T = dS_T^T. Its gradients with respect to k', v', g, beta, h0' are gated_oja's dv, dk, dg,
// dbeta, dh0^T, and gated_oja's dq = O' (the loss is linear in dO' = q), kda's output on
// q' = dO: chunk_delta.cu's backward kernels and chunk_fwd_o on those arguments, and the
// transposes of the states here.
#include "detail/chunk_device.cuh" // load, store, at_k, at_v, at_state, at_score, gate,
                                   // chunk_rows, solve_tril, check_sync, allow_shared_memory,
                                   // state_grid, C, MAX_K, BV, THREADS, STATE_PER_THREAD, KS
#include "detail/low_rank_launch.hpp"

#include <algorithm> // std::min

namespace ruleproof::gpu::detail {

namespace {

/// An fp32 state carried between layouts (the transposes of gated_oja's states).
__device__ inline float load_state(const float *x, long i) {
#ifdef RULEPROOF_PLANTED_BUG // gpu_check_planted only: a deliberate bug, states read in bf16
  return __bfloat162float(__float2bfloat16_rn(x[i]));
#else
  return x[i];
#endif
}

/// dplr, the engine's a (flash-linear-attention's b) and d (its -a) of row r, head h, key c.
template <class In>
__device__ inline float engine_a(const In *b_fla, int r, int h, int c, const ChunkDims &d) {
  return load(b_fla, at_k(r, h, c, d));
}
template <class In>
__device__ inline float engine_d(const In *a_fla, int r, int h, int c, const ChunkDims &d) {
  return -load(a_fla, at_k(r, h, c, d));
}

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
// dplr: chunk_dplr_fwd_intra, solve_tril, recompute_w_c: grid (NC, H), THREADS threads; one
// chunk of one head.
template <class In>
__global__ void chunk_dplr_fwd_wy_kernel(const In *q, const In *k, const In *v, const In *a_fla,
                                         const In *b_fla, const float *g_cum, float *A_qk,
                                         float *A_qa, float *A_ba, float *A_bk, float *E_out,
                                         float *w, float *c_out, DeviceChunkTable t, ChunkDims d) {
  __shared__ float Aba[C][C]; // A_ba, then E A_bk
  __shared__ float E[C][C];
  __shared__ float Abk[C][C];
  const int c = blockIdx.x, hd = blockIdx.y;
  const ChunkRows rows = chunk_rows(t, c);
  const int n = rows.n, bos = rows.bos;
  for (int e = threadIdx.x; e < C * C; e += blockDim.x) {
    const int i = e / C, j = e % C;
    float qk = 0, qa = 0, ba = 0, bk = 0;
    if (i < n && j <= i) {
      const int ri = bos + i, rj = bos + j;
      for (int col = 0; col < d.K; ++col) {
        const float q_i = load(q, at_k(ri, hd, col, d)) * d.scale;
        const float k_j = load(k, at_k(rj, hd, col, d)), a_j = engine_a(b_fla, rj, hd, col, d);
        const float r = expf(gate(g_cum, ri, hd, col, d) - gate(g_cum, rj, hd, col, d));
        qk += q_i * k_j * r;
        qa += q_i * a_j * r;
        if (j < i) {
          const float x = engine_d(a_fla, ri, hd, col, d) *
                          expf(gate_excl(g_cum, ri, bos, hd, col, d) - gate(g_cum, rj, hd, col, d));
          ba += x * a_j;
          bk += x * k_j;
        }
      }
    }
    Aba[i][j] = ba;
    Abk[i][j] = bk;
    E[i][j] = i == j ? 1.0f : 0.0f;
    if (i < n) {
      const long at = at_score(bos + i, hd, j, d);
      A_qk[at] = qk;
      A_qa[at] = qa;
      A_ba[at] = ba;
      A_bk[at] = bk;
    }
  }
  __syncthreads();
  solve_tril(Aba, E, n); // E = (I + A_ba)^-1
  __syncthreads();
  for (int e = threadIdx.x; e < n * C; e += blockDim.x)
    E_out[at_score(bos + e / C, hd, e % C, d)] = E[e / C][e % C];
  for (int e = threadIdx.x; e < n * d.K; e += blockDim.x) { // w = E (d . e^gx)
    const int i = e / d.K, col = e % d.K;
    float acc = 0;
    for (int m = 0; m <= i; ++m)
      acc += E[i][m] * (engine_d(a_fla, bos + m, hd, col, d) *
                        expf(gate_excl(g_cum, bos + m, bos, hd, col, d)));
    w[at_k(bos + i, hd, col, d)] = acc;
  }
  for (int e = threadIdx.x; e < C * C; e += blockDim.x) { // E A_bk (strictly lower), into Aba
    const int i = e / C, j = e % C;
    float acc = 0;
    for (int m = j + 1; m <= i && m < n; ++m)
      acc += E[i][m] * Abk[m][j];
    Aba[i][j] = acc;
  }
  __syncthreads();
  for (int e = threadIdx.x; e < n * d.V; e += blockDim.x) { // c = -(E A_bk) v
    const int i = e / d.V, jv = e % d.V;
    float acc = 0;
    for (int m = 0; m < i; ++m)
      acc += Aba[i][m] * load(v, at_v(bos + m, hd, jv, d));
    c_out[at_v(bos + i, hd, jv, d)] = -acc;
  }
}

// ---------------------------------------------------------------------------------------
// dplr: chunk_dplr_fwd_h: grid (N, H, V / BV), THREADS threads; the block walks its sequence's
// chunks in order, keeping K x BV entries of the state in registers (entry e = tid + m THREADS
// is row e / BV, column e % BV of the tile), as chunk_delta.cu's chunk_delta_fwd_h does; v2
// reads the chunk's start state back from h[c], just written by the block. The decayed rows
// k . e^{gl - g}, then a . e^{gl - g}, take turns in one tile (detail/chunk_device.cuh:
// read_state_tile, write_state_tile, decay_and_add).
template <class In>
__global__ void chunk_dplr_fwd_h_kernel(const In *k, const In *v, const In *b_fla, const float *w,
                                        const float *c_in, const float *g_cum, const float *h0,
                                        float *h, float *v2, float *ht, DeviceChunkTable t,
                                        ChunkDims d) {
  __shared__ float decayed[C][MAX_K];
  __shared__ float v_tile[C][BV];
  __shared__ float v2_tile[C][BV];
  const int n = blockIdx.x, hd = blockIdx.y, v0 = blockIdx.z * BV, tid = threadIdx.x;
  const int entries = d.K * BV;
  float state[STATE_PER_THREAD];
  read_state_tile(state, h0, n, hd, v0, d);
  for (int c = t.seq_first_chunk[n]; c < t.seq_first_chunk[n + 1]; ++c) {
    const ChunkRows rows = chunk_rows(t, c);
    const int last = rows.bos + rows.n - 1;
    write_state_tile(state, h, c, hd, v0, d); // the state at the chunk's start
    __syncthreads(); // h[c] is visible to the block; the previous chunk's tiles are not read
    for (int e = tid; e < rows.n * BV; e += THREADS) { // v2 = c - w h
      const int r = e / BV, j = e % BV;
      float wh = 0;
      for (int i = 0; i < d.K; ++i)
        wh += w[at_k(rows.bos + r, hd, i, d)] * h[at_state(c, hd, i, v0 + j, d)];
      const float x = c_in[at_v(rows.bos + r, hd, v0 + j, d)] - wh;
      v2_tile[r][j] = x;
      v2[at_v(rows.bos + r, hd, v0 + j, d)] = x;
      v_tile[r][j] = load(v, at_v(rows.bos + r, hd, v0 + j, d));
    }
    for (int e = tid; e < rows.n * d.K; e += THREADS) {
      const int r = e / d.K, col = e % d.K;
      decayed[r][col] = load(k, at_k(rows.bos + r, hd, col, d)) *
                        expf(gate(g_cum, last, hd, col, d) - gate(g_cum, rows.bos + r, hd, col, d));
    }
    __syncthreads();
    // Diag(e^gl) h + (k . e^{gl - g})^T v
    decay_and_add(state, decayed, v_tile, rows.n, g_cum, last, hd, d);
    __syncthreads(); // every thread is done with the decayed keys
    for (int e = tid; e < rows.n * d.K; e += THREADS) {
      const int r = e / d.K, col = e % d.K;
      decayed[r][col] = engine_a(b_fla, rows.bos + r, hd, col, d) *
                        expf(gate(g_cum, last, hd, col, d) - gate(g_cum, rows.bos + r, hd, col, d));
    }
    __syncthreads();
#pragma unroll
    for (int m = 0; m < STATE_PER_THREAD; ++m) { // + (a . e^{gl - g})^T v2
      const int e = tid + m * THREADS, i = e / BV, j = e % BV;
      if (e < entries) {
        float av2 = 0;
        for (int r = 0; r < rows.n; ++r)
          av2 += decayed[r][i] * v2_tile[r][j];
        state[m] += av2;
      }
    }
  }
  write_state_tile(state, ht, n, hd, v0, d);
}

// ---------------------------------------------------------------------------------------
// dplr: chunk_dplr_fwd_o: grid (NC, H), THREADS threads; one chunk of one head, the scores read
// back from the stages A_qk, A_qa.
template <class In>
__global__ void chunk_dplr_fwd_o_kernel(const In *q, const In *v, const float *g_cum,
                                        const float *A_qk, const float *A_qa, const float *h,
                                        const float *v2, In *o, DeviceChunkTable t, ChunkDims d) {
  const int c = blockIdx.x, hd = blockIdx.y;
  const ChunkRows rows = chunk_rows(t, c);
  for (int e = threadIdx.x; e < rows.n * d.V; e += blockDim.x) {
    const int i = e / d.V, jv = e % d.V, r = rows.bos + i;
    float acc = 0; // (q~ . e^g) h: the state carried in
    for (int col = 0; col < d.K; ++col)
      acc += (load(q, at_k(r, hd, col, d)) * d.scale) * expf(gate(g_cum, r, hd, col, d)) *
             h[at_state(c, hd, col, jv, d)];
    for (int j = 0; j <= i; ++j) // A_qk v + A_qa v2: inside the chunk
      acc += A_qk[at_score(r, hd, j, d)] * load(v, at_v(rows.bos + j, hd, jv, d)) +
             A_qa[at_score(r, hd, j, d)] * v2[at_v(rows.bos + j, hd, jv, d)];
    store(o, at_v(r, hd, jv, d), acc);
  }
}

// ---------------------------------------------------------------------------------------
// dplr: the WY part of the backward: grid (NC, H), THREADS threads; one chunk of one head.
template <class In>
__global__ void chunk_dplr_bwd_wy_kernel(const In *a_fla, const In *v, const float *g_cum,
                                         const float *A_bk, const float *E_stage, const float *h,
                                         const float *dv2, float *dw, float *Et_dv2, float *dA_ba,
                                         DeviceChunkTable t, ChunkDims d) {
  __shared__ float E[C][C];
  __shared__ float dE[C][C];
  __shared__ float T[C][C]; // dv2 v^T, then E^T dE
  const int c = blockIdx.x, hd = blockIdx.y;
  const ChunkRows rows = chunk_rows(t, c);
  const int n = rows.n, bos = rows.bos;
  for (int e = threadIdx.x; e < C * C; e += blockDim.x) {
    const int i = e / C, j = e % C;
    E[i][j] = i < n ? E_stage[at_score(bos + i, hd, j, d)] : 0.0f;
    float x = 0; // (dv2 v^T)_ij
    if (i < n && j < n)
      for (int jv = 0; jv < d.V; ++jv)
        x += dv2[at_v(bos + i, hd, jv, d)] * load(v, at_v(bos + j, hd, jv, d));
    T[i][j] = x;
  }
  for (int e = threadIdx.x; e < n * d.K; e += blockDim.x) { // dw = -dv2 h^T
    const int i = e / d.K, col = e % d.K;
    float x = 0;
    for (int jv = 0; jv < d.V; ++jv)
      x += dv2[at_v(bos + i, hd, jv, d)] * h[at_state(c, hd, col, jv, d)];
    dw[at_k(bos + i, hd, col, d)] = -x;
  }
  __syncthreads();                                          // E, T and dw are visible to the block
  for (int e = threadIdx.x; e < n * d.V; e += blockDim.x) { // E^T dv2
    const int i = e / d.V, jv = e % d.V;
    float x = 0;
    for (int m = i; m < n; ++m)
      x += E[m][i] * dv2[at_v(bos + m, hd, jv, d)];
    Et_dv2[at_v(bos + i, hd, jv, d)] = x;
  }
  for (int e = threadIdx.x; e < C * C; e += blockDim.x) {
    // dE = -dv2 (A_bk v)^T + dw (d . e^gx)^T, strictly lower (the rest does not reach A_ba)
    const int i = e / C, j = e % C;
    float x = 0;
    if (i < n && j < i) {
      float from_c = 0, from_w = 0;
      for (int p = 0; p < j; ++p)
        from_c += T[i][p] * A_bk[at_score(bos + j, hd, p, d)];
      for (int col = 0; col < d.K; ++col)
        from_w +=
            dw[at_k(bos + i, hd, col, d)] * (engine_d(a_fla, bos + j, hd, col, d) *
                                             expf(gate_excl(g_cum, bos + j, bos, hd, col, d)));
      x = from_w - from_c;
    }
    dE[i][j] = x;
  }
  __syncthreads();
  for (int e = threadIdx.x; e < C * C; e += blockDim.x) { // T = E^T dE
    const int i = e / C, j = e % C;
    float x = 0;
    if (i < n && j < n)
      for (int m = max(i, j + 1); m < n; ++m)
        x += E[m][i] * dE[m][j];
    T[i][j] = x;
  }
  __syncthreads();
  for (int e = threadIdx.x; e < n * C; e += blockDim.x) { // dA_ba = -(T E^T), strictly lower
    const int i = e / C, j = e % C;
    float x = 0;
    if (j < i)
      for (int m = 0; m <= j; ++m)
        x += T[i][m] * E[j][m];
    dA_ba[at_score(bos + i, hd, j, d)] = -x;
  }
}

// ---------------------------------------------------------------------------------------
// dplr: dq, dk, dv, da, db and the gate: grid (NC, H), THREADS threads; one chunk of one head.
// THREADS is a multiple of K, so each thread keeps one key column (tid % K) of its rows; the
// term d . dd that the gate takes one row up goes through d_dd.
template <class In>
__global__ void
chunk_dplr_bwd_dqk_kernel(const In *q, const In *k, const In *v, const In *a_fla, const In *b_fla,
                          const float *g_cum, const float *A_qk, const float *A_bk, const float *E,
                          const float *h, const float *ht, const float *v2, const In *d_o,
                          const float *dh, const float *dw, const float *Et_dv2, const float *dA_ba,
                          In *dq, In *dk, In *dv, In *da_fla, In *db_fla, float *dG, float *d_dd,
                          DeviceChunkTable t, ChunkDims d) {
  __shared__ float dA_qk[C][C];
  __shared__ float dA_qa[C][C];
  __shared__ float dA_bk[C][C];
  const int c = blockIdx.x, hd = blockIdx.y;
  const ChunkRows rows = chunk_rows(t, c);
  const int n = rows.n, bos = rows.bos, last = bos + n - 1;
  for (int e = threadIdx.x; e < C * C; e += blockDim.x) {
    const int i = e / C, j = e % C;
    float x_qk = 0, x_qa = 0, x_bk = 0;
    if (i < n && j <= i)
      for (int jv = 0; jv < d.V; ++jv) {
        const float do_i = load(d_o, at_v(bos + i, hd, jv, d));
        x_qk += do_i * load(v, at_v(bos + j, hd, jv, d));
        x_qa += do_i * v2[at_v(bos + j, hd, jv, d)];
        if (j < i)
          x_bk += Et_dv2[at_v(bos + i, hd, jv, d)] * load(v, at_v(bos + j, hd, jv, d));
      }
    dA_qk[i][j] = x_qk;
    dA_qa[i][j] = x_qa;
    dA_bk[i][j] = -x_bk;
  }
  __syncthreads();
  const int col = threadIdx.x % d.K;
  const float gl = gate(g_cum, last, hd, col, d);
  for (int i = threadIdx.x / d.K; i < n; i += THREADS / d.K) {
    const int r = bos + i;
    const long at = at_k(r, hd, col, d);
    const float g_i = gate(g_cum, r, hd, col, d), gx_i = gate_excl(g_cum, r, bos, hd, col, d);
    float do_h = 0, v_dh = 0, v2_dh = 0; // dO_i . h_col, v_i . dh_col, v2_i . dh_col
    for (int jv = 0; jv < d.V; ++jv) {
      const float dh_cj = dh[at_state(c, hd, col, jv, d)];
      do_h += load(d_o, at_v(r, hd, jv, d)) * h[at_state(c, hd, col, jv, d)];
      v_dh += load(v, at_v(r, hd, jv, d)) * dh_cj;
      v2_dh += v2[at_v(r, hd, jv, d)] * dh_cj;
    }
    float in_k = 0, in_a = 0; // sum_{j<=i} dA_qk_ij k_jc R_ijc, dA_qa_ij a_jc R_ijc
    for (int j = 0; j <= i; ++j) {
      const float R = expf(g_i - gate(g_cum, bos + j, hd, col, d));
      in_k += dA_qk[i][j] * load(k, at_k(bos + j, hd, col, d)) * R;
      in_a += dA_qa[i][j] * engine_a(b_fla, bos + j, hd, col, d) * R;
    }
    float dk_o = 0, da_o = 0; // sum_{m>=i} dA_qk_mi q~_mc R_mic, dA_qa_mi q~_mc R_mic
    for (int m = i; m < n; ++m) {
      const float qR = (load(q, at_k(bos + m, hd, col, d)) * d.scale) *
                       expf(gate(g_cum, bos + m, hd, col, d) - g_i);
      dk_o += dA_qk[m][i] * qR;
      da_o += dA_qa[m][i] * qR;
    }
    float dk_b = 0, da_b = 0; // sum_{m>i} dA_bk_mi d_mc Rx_mic, dA_ba_mi d_mc Rx_mic
    for (int m = i + 1; m < n; ++m) {
      const float dR = engine_d(a_fla, bos + m, hd, col, d) *
                       expf(gate_excl(g_cum, bos + m, bos, hd, col, d) - g_i);
      dk_b += dA_bk[m][i] * dR;
      da_b += dA_ba[at_score(bos + m, hd, i, d)] * dR;
    }
    float et_dw = 0; // (E^T dw)_ic
    for (int m = i; m < n; ++m)
      et_dw += E[at_score(bos + m, hd, i, d)] * dw[at_k(bos + m, hd, col, d)];
    float dd_k = 0, dd_a = 0; // sum_{j<i} dA_bk_ij k_jc Rx_ijc, dA_ba_ij a_jc Rx_ijc
    for (int j = 0; j < i; ++j) {
      const float Rx = expf(gx_i - gate(g_cum, bos + j, hd, col, d));
      dd_k += dA_bk[i][j] * load(k, at_k(bos + j, hd, col, d)) * Rx;
      dd_a += dA_ba[at_score(r, hd, j, d)] * engine_a(b_fla, bos + j, hd, col, d) * Rx;
    }
    const float to_end = expf(gl - g_i);
    const float dq_tilde = (expf(g_i) * do_h + in_k) + in_a;
    const float dk_i = (dk_o + to_end * v_dh) + dk_b;
    const float da_i = (da_o + to_end * v2_dh) + da_b;
    const float dd_i = (expf(gx_i) * et_dw + dd_k) + dd_a;
    const float q_i = load(q, at) * d.scale, k_i = load(k, at);
    const float a_i = engine_a(b_fla, r, hd, col, d), d_i = engine_d(a_fla, r, hd, col, d);
    store(dq, at, d.scale * dq_tilde);
    store(dk, at, dk_i);
    store(db_fla, at, da_i);  // flash-linear-attention's b is the engine's a
    store(da_fla, at, -dd_i); // and its a is -d
    dG[at] = (q_i * dq_tilde - k_i * dk_i) - a_i * da_i;
    d_dd[at] = d_i * dd_i;
  }
  __syncthreads(); // every row's d . dd is visible to the block
  const int seq = t.chunk_seq[c];
  const float *h_end = c + 1 < t.seq_first_chunk[seq + 1] ? h + at_state(c + 1, hd, 0, 0, d)
                                                          : ht + at_state(seq, hd, 0, 0, d);
  for (int i = threadIdx.x / d.K; i < n; i += THREADS / d.K) {
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
  for (int e = threadIdx.x; e < n * d.V; e += blockDim.x) {
    // dv = (k . e^{gl - g}) dh + A_qk^T dO - A_bk^T E^T dv2
    const int j = e / d.V, jv = e % d.V, r = bos + j;
    float from_state = 0, from_qk = 0, from_bk = 0;
    for (int kc = 0; kc < d.K; ++kc)
      from_state += load(k, at_k(r, hd, kc, d)) *
                    expf(gate(g_cum, last, hd, kc, d) - gate(g_cum, r, hd, kc, d)) *
                    dh[at_state(c, hd, kc, jv, d)];
    for (int i = j; i < n; ++i)
      from_qk += A_qk[at_score(bos + i, hd, j, d)] * load(d_o, at_v(bos + i, hd, jv, d));
    for (int i = j + 1; i < n; ++i)
      from_bk += A_bk[at_score(bos + i, hd, j, d)] * Et_dv2[at_v(bos + i, hd, jv, d)];
    store(dv, at_v(r, hd, jv, d), (from_state + from_qk) - from_bk);
  }
}

// ---------------------------------------------------------------------------------------
// gated_oja: chunk_oja_fwd_o: grid (NC, H), THREADS threads, sizeof(OjaFwdOShared) of dynamic
// shared memory; one chunk of one head. d in gated_oja's orientation (K keys, V values, the
// gate per value); h_vk [NC, H, V, K]. The keys go through shared memory KS columns at a time
// (q~, k_new and the state's rows), each thread keeping its scores and its outputs' sums in
// registers (output e = tid + m THREADS is row e / V, value e % V); then the chunk's v and
// g_cum are staged whole.
struct OjaFwdOShared {
  float P[C][C];
  union {
    struct {
      float q[C][KS + 1], k_new[C][KS + 1]; // KS key columns of q~ and k_new
      float h[MAX_K][KS + 1];               // and of the state's row of each value
    } keys;
    struct {
      float v[C][MAX_K + 1], g[C][MAX_K + 1];
    } values;
  };
};

template <class In>
__global__ void chunk_oja_fwd_o_kernel(const In *q, const In *v, const float *k_new,
                                       const float *g_cum, const float *h_vk, In *o,
                                       DeviceChunkTable t, ChunkDims d) {
  constexpr int PAIRS = C * C / THREADS, OUTS = C * MAX_K / THREADS;
  extern __shared__ float4 oja_fwd_o_shared[];
  OjaFwdOShared &s = *reinterpret_cast<OjaFwdOShared *>(oja_fwd_o_shared);
  const int c = blockIdx.x, hd = blockIdx.y, tid = threadIdx.x;
  const ChunkRows rows = chunk_rows(t, c);
  const int n = rows.n, bos = rows.bos;
  const float *h = h_vk + static_cast<long>(c * d.H + hd) * d.V * d.K; // h_vk[c][hd]
  float p[PAIRS] = {};                                                 // P = q~ k_new^T, lower
  float qh[OUTS] = {}; // q~_i . h_jv (the state's column jv)
  for (int c0 = 0; c0 < d.K; c0 += KS) {
    __syncthreads(); // the previous slice is no longer read
    for (int e = tid; e < n * KS; e += THREADS) {
      const int r = e / KS, kc = e % KS;
      s.keys.q[r][kc] = load(q, at_k(bos + r, hd, c0 + kc, d)) * d.scale;
      s.keys.k_new[r][kc] = k_new[at_k(bos + r, hd, c0 + kc, d)];
    }
    for (int e = tid; e < d.V * KS; e += THREADS) {
      const int jv = e / KS, kc = e % KS;
      s.keys.h[jv][kc] = h[static_cast<long>(jv) * d.K + c0 + kc];
    }
    __syncthreads();
#pragma unroll
    for (int m = 0; m < PAIRS; ++m) {
      const int e = tid + m * THREADS, i = e / C, j = e % C;
      if (i < n && j <= i)
        for (int kc = 0; kc < KS; ++kc)
          p[m] += s.keys.q[i][kc] * s.keys.k_new[j][kc];
    }
#pragma unroll
    for (int m = 0; m < OUTS; ++m) {
      const int e = tid + m * THREADS, i = e / d.V, jv = e % d.V;
      if (i < n)
        for (int kc = 0; kc < KS; ++kc)
          qh[m] += s.keys.q[i][kc] * s.keys.h[jv][kc];
    }
  }
  __syncthreads(); // the key slices are no longer read
#pragma unroll
  for (int m = 0; m < PAIRS; ++m)
    s.P[(tid + m * THREADS) / C][(tid + m * THREADS) % C] = p[m];
  for (int e = tid; e < n * d.V; e += THREADS) {
    const int r = e / d.V, jv = e % d.V;
    s.values.v[r][jv] = load(v, at_v(bos + r, hd, jv, d));
    s.values.g[r][jv] = gate(g_cum, bos + r, hd, jv, d);
  }
  __syncthreads();
#pragma unroll
  for (int m = 0; m < OUTS; ++m) {
    const int e = tid + m * THREADS, i = e / d.V, jv = e % d.V;
    if (i < n) {
      const float g_i = s.values.g[i][jv];
      float acc = expf(g_i) * qh[m];
      for (int j = 0; j <= i; ++j)
        acc += s.P[i][j] * s.values.v[j][jv] * expf(g_i - s.values.g[j][jv]);
      store(o, at_v(bos + i, hd, jv, d), acc);
    }
  }
}

/// y [M, H, Y, X] = x [M, H, X, Y] transposed in its last two axes.
__global__ void transpose_states_kernel(const float *x, float *y, long total, int X, int Y) {
  for (long e = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<long>(gridDim.x) * blockDim.x) {
    const long mh = e / (static_cast<long>(X) * Y);
    const int i = static_cast<int>((e / Y) % X), j = static_cast<int>(e % Y);
    y[(mh * Y + j) * X + i] = load_state(x, e);
  }
}

/// f(In{}) with In the input type of the call (fp16 or bf16).
template <class F> void with_input_type(const ChunkDims &d, F f) {
  if (d.fp16)
    f(__half{});
  else
    f(__nv_bfloat16{});
}

template <class In> const In *in(const void *p) { return static_cast<const In *>(p); }
template <class In> In *out(void *p) { return static_cast<In *>(p); }

} // namespace

void launch_chunk_dplr_fwd_wy(const void *q, const void *k, const void *v, const void *a,
                              const void *b, const float *g_cum, float *A_qk, float *A_qa,
                              float *A_ba, float *A_bk, float *E, float *w, float *c,
                              const DeviceChunkTable &t, const ChunkDims &d) {
  if (t.NC == 0)
    return;
  with_input_type(d, [&](auto x) {
    using In = decltype(x);
    chunk_dplr_fwd_wy_kernel<<<dim3(t.NC, d.H), THREADS>>>(in<In>(q), in<In>(k), in<In>(v),
                                                           in<In>(a), in<In>(b), g_cum, A_qk, A_qa,
                                                           A_ba, A_bk, E, w, c, t, d);
  });
  check_sync("chunk_dplr_fwd_wy_kernel");
}

void launch_chunk_dplr_fwd_h(const void *k, const void *v, const void *b, const float *w,
                             const float *c, const float *g_cum, const float *h0, float *h,
                             float *v2, float *ht, const DeviceChunkTable &t, const ChunkDims &d) {
  if (t.N == 0)
    return;
  with_input_type(d, [&](auto x) {
    using In = decltype(x);
    chunk_dplr_fwd_h_kernel<<<state_grid(t, d), THREADS>>>(in<In>(k), in<In>(v), in<In>(b), w, c,
                                                           g_cum, h0, h, v2, ht, t, d);
  });
  check_sync("chunk_dplr_fwd_h_kernel");
}

void launch_chunk_dplr_fwd_o(const void *q, const void *v, const float *g_cum, const float *A_qk,
                             const float *A_qa, const float *h, const float *v2, void *o,
                             const DeviceChunkTable &t, const ChunkDims &d) {
  if (t.NC == 0)
    return;
  with_input_type(d, [&](auto x) {
    using In = decltype(x);
    chunk_dplr_fwd_o_kernel<<<dim3(t.NC, d.H), THREADS>>>(in<In>(q), in<In>(v), g_cum, A_qk, A_qa,
                                                          h, v2, out<In>(o), t, d);
  });
  check_sync("chunk_dplr_fwd_o_kernel");
}

void launch_chunk_dplr_bwd_wy(const void *a, const void *v, const float *g_cum, const float *A_bk,
                              const float *E, const float *h, const float *dv2, float *dw,
                              float *Et_dv2, float *dA_ba, const DeviceChunkTable &t,
                              const ChunkDims &d) {
  if (t.NC == 0)
    return;
  with_input_type(d, [&](auto x) {
    using In = decltype(x);
    chunk_dplr_bwd_wy_kernel<<<dim3(t.NC, d.H), THREADS>>>(in<In>(a), in<In>(v), g_cum, A_bk, E, h,
                                                           dv2, dw, Et_dv2, dA_ba, t, d);
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
  with_input_type(d, [&](auto x) {
    using In = decltype(x);
    chunk_dplr_bwd_dqk_kernel<<<dim3(t.NC, d.H), THREADS>>>(
        in<In>(q), in<In>(k), in<In>(v), in<In>(a), in<In>(b), g_cum, A_qk, A_bk, E, h, ht, v2,
        in<In>(d_o), dh, dw, Et_dv2, dA_ba, out<In>(dq), out<In>(dk), out<In>(dv), out<In>(da),
        out<In>(db), dG, d_dd, t, d);
  });
  check_sync("chunk_dplr_bwd_dqk_kernel");
}

void launch_chunk_oja_fwd_o(const void *q, const void *v, const float *k_new, const float *g_cum,
                            const float *h_vk, void *o, const DeviceChunkTable &t,
                            const ChunkDims &d) {
  if (t.NC == 0)
    return;
  const int bytes = static_cast<int>(sizeof(OjaFwdOShared));
  with_input_type(d, [&](auto x) {
    using In = decltype(x);
    allow_shared_memory(chunk_oja_fwd_o_kernel<In>, bytes, "chunk_oja_fwd_o_kernel");
    chunk_oja_fwd_o_kernel<<<dim3(t.NC, d.H), THREADS, bytes>>>(in<In>(q), in<In>(v), k_new, g_cum,
                                                                h_vk, out<In>(o), t, d);
  });
  check_sync("chunk_oja_fwd_o_kernel");
}

void launch_transpose_states(const float *x, float *y, int M, int H, int X, int Y) {
  const long total = static_cast<long>(M) * H * X * Y;
  if (total == 0)
    return;
  const int blocks = static_cast<int>(std::min<long>((total + THREADS - 1) / THREADS, 4096));
  transpose_states_kernel<<<blocks, THREADS>>>(x, y, total, X, Y);
  check_sync("transpose_states_kernel");
}

} // namespace ruleproof::gpu::detail
