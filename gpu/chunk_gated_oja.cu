// ruleproof: chunkwise gated_oja kernels on Hopper (sm_90), per-value gate and beta: what is
// its own beside the delta rules' kernels (gpu/chunk_delta.cu), which it runs with keys and
// values exchanged: its output (chunk_oja_fwd_o) and the transposes of its states. Inputs bf16
// or fp16; gates, beta, states, every intermediate and every sum in fp32; outputs o, dq, dk, dv
// stored in the input type, everything else fp32. Chunk size C = 64.
//
// CPU reference, one grep away: reference/gated_oja/chunk.hpp (chunk_oja_fwd_o; the rest
// kda's stages, reference/kda/chunk.hpp) and reference/gated_oja/BACKWARD.md (seed 000,
// section 1.3); what it shares with dplr, reference/low_rank/chunk.hpp. The emulated twin is
// gpu/twin.hpp; the host API with its shape checks gpu/chunk_gated_oja.hpp (its host side,
// gpu/chunk_gated_oja.cpp, runs the delta rules' kernels and these in the order below).
//
// Compile: part of the ruleproof_gpu library (nvcc -arch=sm_90, C++17), or by hand:
//   nvcc -std=c++17 -gencode=arch=compute_90,code=sm_90 -I. -c gpu/chunk_gated_oja.cu
//
// Versions:
//   1. readable first, as chunk_delta.cu's version 1: one block per (chunk, head), fp32
//      CUDA-core arithmetic, every decay exp(g_cum_i - g_cum_j) taken pairwise (exponents <= 0).
//      No tensor cores.
//   2. (this one) the same arithmetic in the same order, with the operands of chunk_oja_fwd_o
//      staged in shared memory, as chunk_delta.cu's version 2 stages its own (KS columns at a
//      time, each thread's sums kept in registers, or whole tiles where they fit).
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
#include "detail/chunk_device.cuh" // load, store, at_k, at_v, gate, chunk_rows, check_sync,
                                   // allow_shared_memory, with_input_type, in, out,
                                   // C, MAX_K, THREADS, KS
#include "detail/gated_oja_launch.hpp"

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

} // namespace

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
