// ruleproof: chunkwise GLA kernels (gla: per-key gate; simple_gla: scalar gate), forward and
// backward, on Hopper (sm_90). Inputs bf16 or fp16; gates, states and every sum in fp32;
// outputs o, dq, dk, dv stored in the input type, everything else fp32. Chunk size C = 64.
//
// CPU reference, one grep away: reference/shared/chunk.hpp (chunk_local_cumsum) and
// reference/gla/chunk.hpp (chunk_forward_pass: the scores, chunk_fwd_h and chunk_fwd_o of each
// chunk; the backward's stages of the same names: chunk_bwd_dh, chunk_bwd_dqkv, chunk_bwd_dg,
// run by chunk_backward_head); simple_gla is gla with its gate repeated over the
// keys (reference/simple_gla/simple_gla.hpp). The emulated twin of these kernels is
// gpu/twin.hpp; the host API with its shape checks gpu/chunk_gla.hpp.
//
// Compile: part of the ruleproof_gpu library (nvcc -arch=sm_90, C++17), or by hand:
//   nvcc -std=c++17 -gencode=arch=compute_90,code=sm_90 -I. -c gpu/chunk_gla.cu
//
// Versions:
//   1. readable first: one block per (chunk, head) or (sequence, head, value tile), fp32
//      CUDA-core arithmetic, every decay exp(g_cum_i - g_cum_j) taken pairwise (never
//      factored, so no exp can overflow however small the gates), operands read from global
//      memory except the tiles the state kernels stage in shared memory. No tensor cores.
//      H100, B=4 T=4096 H=16 K=V=128 bf16 (gpu_bench): gla fwd 16.0 ms, fwd+bwd 78.4 ms.
//   2. (this one) the same arithmetic in the same order, with the operands of the scores, of
//      chunk_fwd_o and of chunk_bwd_dqkv staged in shared memory KS = 32 columns at a time
//      (rows padded against bank conflicts) and each thread's sums kept in registers; every
//      exp of a (row, key) pair computed once per block instead of once per output column.
//      chunk_bwd_dqkv takes its slices in dynamic shared memory (92 KB with A and dA).
//
// Per chunk of n rows with start state h (K x V), g_cum the gate summed from the chunk start
// (seed 002's log-space form), q~ = scale q, gl = g_cum of the chunk's last row:
//   A_ij  = sum_c q~_ic k_jc exp(g_cum_ic - g_cum_jc)            (j <= i)
//   o_i   = sum_c q~_ic exp(g_cum_ic) h_c + sum_{j<=i} A_ij v_j
//   h'    = Diag(exp(gl)) h + sum_j (k_j . exp(gl - g_cum_j)) v_j^T
// Backward of <dO, O> + <dS_T, S_T>, dh the gradient of the state after the chunk:
//   dA_ij = dO_i . v_j (j <= i)
//   dv_j  = sum_{i>=j} A_ij dO_i + sum_c k_jc exp(gl_c - g_cum_jc) dh_c
//   dq_ic = scale (exp(g_cum_ic) dO_i . h_c + sum_{j<=i} dA_ij k_jc exp(g_cum_ic - g_cum_jc))
//   dk_jc = sum_{i>=j} dA_ij q~_ic exp(g_cum_ic - g_cum_jc) + exp(gl_c - g_cum_jc) v_j . dh_c
//   dh_before = Diag(exp(gl)) dh + sum_i (q~_i . exp(g_cum_i)) dO_i^T
//   dG = q . dq - k . dk, dg = its reverse cumulative sum over the sequence, with
//        rowsum(S_T . dS_T) added at the last row (summed over keys for a scalar gate).
#include "detail/chunk_device.cuh" // load, store, at_k, at_v, at_state, gate, chunk_rows,
                                   // chunk_scores, chunk_fwd_o_kernel, check_sync,
                                   // allow_shared_memory, state_grid, with_input_type, in, out,
                                   // read_state_tile, write_state_tile, decay_and_add,
                                   // decayed_to_end, KeySlices, KS
#include "detail/gla_launch.hpp"

namespace ruleproof::gpu::detail {

namespace {

// ---------------------------------------------------------------------------------------
// chunk_local_cumsum (every rule's first stage; chunk_delta.cu's host calls it too): grid (NC,
// H), G threads; each thread sums its gate column down the chunk in row order, as the
// reference does (so g_cum is bitwise the reference's in fp32).
__global__ void chunk_local_cumsum_kernel(const float *g, float *g_cum, DeviceChunkTable t,
                                          ChunkDims d) {
  const int c = blockIdx.x, h = blockIdx.y, col = threadIdx.x;
  const ChunkRows rows = chunk_rows(t, c);
  float acc = 0;
  for (int i = 0; i < rows.n; ++i) {
    const long at = (static_cast<long>(rows.bos + i) * d.H + h) * d.G + col;
    acc += g[at];
    g_cum[at] = acc;
  }
}

// ---------------------------------------------------------------------------------------
// chunk_fwd_h: grid (N, H, V / BV), THREADS threads; the block walks its sequence's chunks in
// order, keeping K x BV entries of the state in registers (entry e = tid + m THREADS is row
// e / BV, column e % BV of the tile).
template <class In>
__global__ void chunk_fwd_h_kernel(const In *k, const In *v, const float *g_cum, const float *h0,
                                   float *h, float *ht, DeviceChunkTable t, ChunkDims d) {
  __shared__ float k_decayed[C][MAX_K]; // k_jc exp(gl_c - g_cum_jc)
  __shared__ float v_tile[C][BV];
  const int n = blockIdx.x, hd = blockIdx.y, v0 = blockIdx.z * BV, tid = threadIdx.x;
  float state[STATE_PER_THREAD];
  read_state_tile(state, h0, n, hd, v0, d);
  for (int c = t.seq_first_chunk[n]; c < t.seq_first_chunk[n + 1]; ++c) {
    const ChunkRows rows = chunk_rows(t, c);
    const int last = rows.bos + rows.n - 1;
    write_state_tile(state, h, c, hd, v0, d); // the state at the chunk's start
    __syncthreads();                          // the tiles of the previous chunk are no longer read
    for (int e = tid; e < rows.n * d.K; e += THREADS) {
      const int r = e / d.K, col = e % d.K;
      k_decayed[r][col] = decayed_to_end(k, g_cum, rows.bos + r, last, hd, col, d);
#ifdef RULEPROOF_PLANTED_BUG // gpu_check_planted only: a deliberate bug, the tile kept in bf16
      k_decayed[r][col] = __bfloat162float(__float2bfloat16_rn(k_decayed[r][col]));
#endif
    }
    for (int e = tid; e < rows.n * BV; e += THREADS) {
      const int r = e / BV, j = e % BV;
      v_tile[r][j] = load(v, at_v(rows.bos + r, hd, v0 + j, d));
    }
    __syncthreads();
    // h' = Diag(e^gl) h + K_decayed^T V
    decay_and_add(state, k_decayed, v_tile, rows.n, g_cum, last, hd, d);
  }
  write_state_tile(state, ht, n, hd, v0, d);
}

// ---------------------------------------------------------------------------------------
// chunk_bwd_dh: grid (N, H, V / BV), THREADS threads; the block walks its sequence's chunks
// backwards, keeping K x BV entries of dh in registers (as chunk_fwd_h keeps the state).
template <class In>
__global__ void chunk_bwd_dh_kernel(const In *q, const In *d_o, const float *g_cum,
                                    const float *dht, float *dh, float *dh0, DeviceChunkTable t,
                                    ChunkDims d) {
  __shared__ float q_decayed[C][MAX_K]; // q~_ic exp(g_cum_ic)
  __shared__ float do_tile[C][BV];
  const int n = blockIdx.x, hd = blockIdx.y, v0 = blockIdx.z * BV, tid = threadIdx.x;
  float grad[STATE_PER_THREAD];
  read_state_tile(grad, dht, n, hd, v0, d);
  for (int c = t.seq_first_chunk[n + 1] - 1; c >= t.seq_first_chunk[n]; --c) {
    const ChunkRows rows = chunk_rows(t, c);
    const int last = rows.bos + rows.n - 1;
    write_state_tile(grad, dh, c, hd, v0, d); // the gradient of the state after chunk c
    __syncthreads();
    for (int e = tid; e < rows.n * d.K; e += THREADS) {
      const int r = e / d.K, col = e % d.K;
      q_decayed[r][col] = (load(q, at_k(rows.bos + r, hd, col, d)) * d.scale) *
                          expf(gate(g_cum, rows.bos + r, hd, col, d));
    }
    for (int e = tid; e < rows.n * BV; e += THREADS) {
      const int r = e / BV, j = e % BV;
      do_tile[r][j] = load(d_o, at_v(rows.bos + r, hd, v0 + j, d));
    }
    __syncthreads();
    // dh = Diag(e^gl) dh' + Q_decayed^T dO
    decay_and_add(grad, q_decayed, do_tile, rows.n, g_cum, last, hd, d);
  }
  write_state_tile(grad, dh0, n, hd, v0, d);
}

// ---------------------------------------------------------------------------------------
/// Value columns [c0, c0 + KS) of dO and v on the chunk's rows, into s.q and s.k.
template <class In>
__device__ void stage_values(const In *d_o, const In *v, ChunkRows rows, int hd, int c0,
                             const ChunkDims &d, KeySlices &s) {
  for (int e = threadIdx.x; e < rows.n * KS; e += THREADS) {
    const int r = e / KS, col = e % KS;
    s.q[r][col] = load(d_o, at_v(rows.bos + r, hd, c0 + col, d));
    s.k[r][col] = load(v, at_v(rows.bos + r, hd, c0 + col, d));
  }
}

// chunk_bwd_dqkv: grid (NC, H), THREADS threads, bwd_dqkv_shared_bytes of dynamic shared
// memory; one chunk of one head. Every sum runs in the order of the formulas at the top (keys,
// values, rows ascending): the operands go through shared memory KS columns at a time while
// each thread keeps its sums in registers (dA: entries e = tid + p THREADS; dv: row e / V,
// column e % V; dq, dk: row e / K, key e % K, for e = tid + m THREADS).
struct BwdSlices {
  KeySlices rows;                            // q~, k, g_cum; then dO and v; then k . e^{gl - g}
  float h[MAX_K][KS + 1], dh[MAX_K][KS + 1]; // KS value columns of the state and its gradient
};
constexpr std::size_t bwd_dqkv_shared_bytes = sizeof(BwdSlices);

template <class In>
__global__ void chunk_bwd_dqkv_kernel(const In *q, const In *k, const In *v, const float *g_cum,
                                      const float *h, const In *d_o, const float *dh, In *dq,
                                      In *dk, In *dv, float *dG, DeviceChunkTable t, ChunkDims d) {
  constexpr int PAIRS = C * C / THREADS, OUTS = C * MAX_K / THREADS;
  __shared__ float A[C][C];
  __shared__ float dA[C][C];
  extern __shared__ float dynamic_shared[];
  BwdSlices &s = *reinterpret_cast<BwdSlices *>(dynamic_shared);
  const int c = blockIdx.x, hd = blockIdx.y, tid = threadIdx.x;
  const ChunkRows rows = chunk_rows(t, c);
  const int last = rows.bos + rows.n - 1;
  chunk_scores(q, k, g_cum, rows, hd, d, A, nullptr, s.rows);
  float a[PAIRS] = {}; // dA = dO V^T, lower triangle
  for (int c0 = 0; c0 < d.V; c0 += KS) {
    __syncthreads();
    stage_values(d_o, v, rows, hd, c0, d, s.rows);
    __syncthreads();
#pragma unroll
    for (int p = 0; p < PAIRS; ++p) {
      const int e = tid + p * THREADS, i = e / C, j = e % C;
      if (i < rows.n && j <= i)
        for (int col = 0; col < KS; ++col)
          a[p] += s.rows.q[i][col] * s.rows.k[j][col];
    }
  }
#pragma unroll
  for (int p = 0; p < PAIRS; ++p)
    dA[(tid + p * THREADS) / C][(tid + p * THREADS) % C] = a[p];
  float acc[OUTS] = {}; // dv: A^T dO, then (k . e^{gl - g_cum}) dh
#pragma unroll
  for (int m = 0; m < OUTS; ++m) {
    const int e = tid + m * THREADS, j = e / d.V, jv = e % d.V;
    if (j < rows.n)
      for (int i = j; i < rows.n; ++i)
        acc[m] += A[i][j] * load(d_o, at_v(rows.bos + i, hd, jv, d));
  }
  for (int c0 = 0; c0 < d.K; c0 += KS) {
    __syncthreads();
    for (int e = tid; e < rows.n * KS; e += THREADS) {
      const int r = e / KS, col = e % KS;
      s.rows.q[r][col] =
          load(k, at_k(rows.bos + r, hd, c0 + col, d)) *
          expf(gate(g_cum, last, hd, c0 + col, d) - gate(g_cum, rows.bos + r, hd, c0 + col, d));
    }
    __syncthreads();
#pragma unroll
    for (int m = 0; m < OUTS; ++m) {
      const int e = tid + m * THREADS, j = e / d.V, jv = e % d.V;
      if (j < rows.n)
        for (int col = 0; col < KS; ++col)
          acc[m] += s.rows.q[j][col] * dh[at_state(c, hd, c0 + col, jv, d)];
    }
  }
#pragma unroll
  for (int m = 0; m < OUTS; ++m) {
    const int e = tid + m * THREADS, j = e / d.V, jv = e % d.V;
    if (j < rows.n)
      store(dv, at_v(rows.bos + j, hd, jv, d), acc[m]);
  }
  float from_state[OUTS] = {}, from_state_k[OUTS] = {}; // dO_i . h_col and v_i . dh_col
  for (int c0 = 0; c0 < d.V; c0 += KS) {
    __syncthreads();
    stage_values(d_o, v, rows, hd, c0, d, s.rows);
    for (int e = tid; e < d.K * KS; e += THREADS) {
      const int i = e / KS, col = e % KS;
      s.h[i][col] = h[at_state(c, hd, i, c0 + col, d)];
      s.dh[i][col] = dh[at_state(c, hd, i, c0 + col, d)];
    }
    __syncthreads();
#pragma unroll
    for (int m = 0; m < OUTS; ++m) {
      const int e = tid + m * THREADS, i = e / d.K, key = e % d.K;
      if (i < rows.n)
        for (int col = 0; col < KS; ++col) {
          from_state[m] += s.rows.q[i][col] * s.h[key][col];
          from_state_k[m] += s.rows.k[i][col] * s.dh[key][col];
        }
    }
  }
#pragma unroll
  for (int m = 0; m < OUTS; ++m) {
    const int e = tid + m * THREADS, i = e / d.K, col = e % d.K, r = rows.bos + i;
    if (i >= rows.n)
      continue;
    const float g_i = gate(g_cum, r, hd, col, d);
    float inside_q = 0; // sum_{j<=i} dA_ij k_jc exp(g_i - g_j)
    for (int j = 0; j <= i; ++j)
      inside_q += dA[i][j] * load(k, at_k(rows.bos + j, hd, col, d)) *
                  expf(g_i - gate(g_cum, rows.bos + j, hd, col, d));
    float inside_k = 0; // sum_{i'>=i} dA_i'i q~_i'c exp(g_i' - g_i)
    for (int ii = i; ii < rows.n; ++ii)
      inside_k += dA[ii][i] * (load(q, at_k(rows.bos + ii, hd, col, d)) * d.scale) *
                  expf(gate(g_cum, rows.bos + ii, hd, col, d) - g_i);
    const float dq_ic = d.scale * (expf(g_i) * from_state[m] + inside_q);
    const float dk_ic = inside_k + expf(gate(g_cum, last, hd, col, d) - g_i) * from_state_k[m];
    store(dq, at_k(r, hd, col, d), dq_ic);
    store(dk, at_k(r, hd, col, d), dk_ic);
    dG[at_k(r, hd, col, d)] =
        load(q, at_k(r, hd, col, d)) * dq_ic - load(k, at_k(r, hd, col, d)) * dk_ic;
  }
}

// ---------------------------------------------------------------------------------------
// chunk_bwd_dg: grid (N, H), K threads; thread col sums its key's dG backwards over the whole
// sequence (in place), then, for a scalar gate, the keys are summed row by row.
__global__ void chunk_bwd_dg_kernel(float *dG, const float *ht, const float *dht, float *dg,
                                    DeviceChunkTable t, ChunkDims d) {
  const int n = blockIdx.x, hd = blockIdx.y, col = threadIdx.x;
  const int bos = t.seq_bos[n], eos = t.seq_eos[n];
  float acc = 0;
  if (eos > bos && ht && dht) // the final state's own term: rowsum(S_T . dS_T), at the last row
    for (int j = 0; j < d.V; ++j)
      acc += ht[at_state(n, hd, col, j, d)] * dht[at_state(n, hd, col, j, d)];
  float running = 0;
  for (int r = eos - 1; r >= bos; --r) {
    float x = dG[at_k(r, hd, col, d)];
    if (r == eos - 1)
      x += acc;
    running += x;
    if (d.G == 1)
      dG[at_k(r, hd, col, d)] = running;
    else
      dg[at_k(r, hd, col, d)] = running;
  }
  if (d.G != 1)
    return;
  __syncthreads(); // every key's column is summed; now add the keys up, row by row
  for (int r = bos + col; r < eos; r += blockDim.x) {
    float sum = 0;
    for (int c = 0; c < d.K; ++c)
      sum += dG[at_k(r, hd, c, d)];
    dg[static_cast<long>(r) * d.H + hd] = sum;
  }
}

} // namespace

void launch_chunk_local_cumsum(const float *g, float *g_cum, const DeviceChunkTable &t,
                               const ChunkDims &d) {
  if (t.NC == 0)
    return;
  chunk_local_cumsum_kernel<<<dim3(t.NC, d.H), d.G>>>(g, g_cum, t, d);
  check_sync("chunk_local_cumsum_kernel");
}

void launch_chunk_fwd_h(const void *k, const void *v, const float *g_cum, const float *h0, float *h,
                        float *ht, const DeviceChunkTable &t, const ChunkDims &d) {
  if (t.N == 0)
    return;
  with_input_type(d, [&](auto x) {
    using In = decltype(x);
    chunk_fwd_h_kernel<<<state_grid(t, d), THREADS>>>(in<In>(k), in<In>(v), g_cum, h0, h, ht, t, d);
  });
  check_sync("chunk_fwd_h_kernel");
}

void launch_chunk_fwd_o(const void *q, const void *k, const void *v, const float *g_cum,
                        const float *h, void *o, float *A, const DeviceChunkTable &t,
                        const ChunkDims &d) {
  if (t.NC == 0)
    return;
  const dim3 grid(t.NC, d.H);
  with_input_type(d, [&](auto x) {
    using In = decltype(x);
    chunk_fwd_o_kernel<<<grid, THREADS>>>(in<In>(q), in<In>(k), in<In>(v), g_cum, h, out<In>(o), A,
                                          t, d);
  });
  check_sync("chunk_fwd_o_kernel");
}

void launch_chunk_bwd_dh(const void *q, const void *d_o, const float *g_cum, const float *dht,
                         float *dh, float *dh0, const DeviceChunkTable &t, const ChunkDims &d) {
  if (t.N == 0)
    return;
  with_input_type(d, [&](auto x) {
    using In = decltype(x);
    chunk_bwd_dh_kernel<<<state_grid(t, d), THREADS>>>(in<In>(q), in<In>(d_o), g_cum, dht, dh, dh0,
                                                       t, d);
  });
  check_sync("chunk_bwd_dh_kernel");
}

void launch_chunk_bwd_dqkv(const void *q, const void *k, const void *v, const float *g_cum,
                           const float *h, const void *d_o, const float *dh, void *dq, void *dk,
                           void *dv, float *dG, const DeviceChunkTable &t, const ChunkDims &d) {
  if (t.NC == 0)
    return;
  const dim3 grid(t.NC, d.H);
  const int bytes = static_cast<int>(bwd_dqkv_shared_bytes);
  with_input_type(d, [&](auto x) {
    using In = decltype(x);
    allow_shared_memory(chunk_bwd_dqkv_kernel<In>, bytes, "chunk_bwd_dqkv_kernel");
    chunk_bwd_dqkv_kernel<<<grid, THREADS, bytes>>>(in<In>(q), in<In>(k), in<In>(v), g_cum, h,
                                                    in<In>(d_o), dh, out<In>(dq), out<In>(dk),
                                                    out<In>(dv), dG, t, d);
  });
  check_sync("chunk_bwd_dqkv_kernel");
}

void launch_chunk_bwd_dg(float *dG, const float *ht, const float *dht, float *dg,
                         const DeviceChunkTable &t, const ChunkDims &d) {
  if (t.N == 0)
    return;
  chunk_bwd_dg_kernel<<<dim3(t.N, d.H), d.K>>>(dG, ht, dht, dg, t, d);
  check_sync("chunk_bwd_dg_kernel");
}

} // namespace ruleproof::gpu::detail
