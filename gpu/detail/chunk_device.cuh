// ruleproof: the device helpers and the one kernel the chunkwise kernel files share
// (gpu/chunk_gla.cu, gpu/chunk_delta.cu, gpu/chunk_dplr.cu, gpu/chunk_gated_oja.cu): element
// loads and stores, the offsets of the layouts in chunk_launch.hpp, a chunk's rows, the decayed
// intra-chunk scores, and chunk_fwd_o (the output from the chunk's start state and the scores,
// for any value type); and on the host, the launchers' helpers (the input type of a call, error
// checks, shared memory, the state kernels' grid). CUDA only.
#pragma once

#include <cuda_bf16.h> // __nv_bfloat16, __bfloat162float, __float2bfloat16_rn
#include <cuda_fp16.h> // __half, __half2float, __float2half_rn
#include <cuda_runtime.h>

#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>

#include "chunk_launch.hpp"

namespace ruleproof::gpu::detail {

constexpr int C = kernel_chunk_size; // rows of a chunk (BT)
constexpr int MAX_K = 128;           // largest K and V the kernels take
constexpr int BV = 32;               // value columns of one block of the state kernels
constexpr int THREADS = 256;         // threads of a block (a multiple of every K)
constexpr int STATE_PER_THREAD = MAX_K * BV / THREADS; // state entries each thread keeps

__device__ inline float load(const __nv_bfloat16 *p, long i) { return __bfloat162float(p[i]); }
__device__ inline float load(const __half *p, long i) { return __half2float(p[i]); }
__device__ inline float load(const float *p, long i) { return p[i]; }
__device__ inline void store(__nv_bfloat16 *p, long i, float x) { p[i] = __float2bfloat16_rn(x); }
__device__ inline void store(__half *p, long i, float x) { p[i] = __float2half_rn(x); }

/// Offsets of the layouts in chunk_launch.hpp.
__device__ inline long at_k(int r, int h, int c, const ChunkDims &d) {
  return (static_cast<long>(r) * d.H + h) * d.K + c;
}
__device__ inline long at_v(int r, int h, int j, const ChunkDims &d) {
  return (static_cast<long>(r) * d.H + h) * d.V + j;
}
__device__ inline long at_state(int n, int h, int i, int j, const ChunkDims &d) {
  return ((static_cast<long>(n) * d.H + h) * d.K + i) * d.V + j;
}
/// Row r, head h, column j of a [B*T, H, C] score layout.
__device__ inline long at_score(int r, int h, int j, const ChunkDims &d) {
  return (static_cast<long>(r) * d.H + h) * C + j;
}
/// g_cum of row r, head h, key c: the key's own column (per-key gate), the one column
/// (scalar gate).
__device__ inline float gate(const float *g_cum, int r, int h, int c, const ChunkDims &d) {
  return g_cum[(static_cast<long>(r) * d.H + h) * d.G + (d.G == 1 ? 0 : c)];
}

/// Rows [bos, bos + n) of chunk c.
struct ChunkRows {
  int bos, n;
};
__device__ inline ChunkRows chunk_rows(const DeviceChunkTable &t, int c) {
  return {t.chunk_bos[c], t.chunk_n[c]}; // two loads side by side, neither waiting on another
}
/// Rows of chunk `index` (from 0) of the sequence of rows [seq_bos, seq_eos): chunk_rows of its
/// chunk, without the table's loads, for a kernel that walks one sequence (ChunkTable cuts each
/// sequence into chunks of C rows from its first).
__device__ inline ChunkRows sequence_chunk_rows(int seq_bos, int seq_eos, int index) {
  const int bos = seq_bos + index * C;
  return {bos, min(C, seq_eos - bos)};
}

// A state tile: the K x BV entries of a state (or of its gradient) that a block of the state
// kernels keeps in registers while it walks a sequence's chunks; entry e = tid + m THREADS
// is row e / BV, column v0 + e % BV.

/// The tile of state n (or chunk n's) read from src; zeros where src is null.
__device__ inline void read_state_tile(float (&x)[STATE_PER_THREAD], const float *src, int n,
                                       int hd, int v0, const ChunkDims &d) {
#pragma unroll
  for (int m = 0; m < STATE_PER_THREAD; ++m) {
    const int e = threadIdx.x + m * THREADS, i = e / BV, j = e % BV;
    x[m] = (e < d.K * BV && src) ? src[at_state(n, hd, i, v0 + j, d)] : 0.0f;
  }
}

/// The tile written to state n (or chunk n's) of dst; nothing where dst is null.
__device__ inline void write_state_tile(const float (&x)[STATE_PER_THREAD], float *dst, int n,
                                        int hd, int v0, const ChunkDims &d) {
  if (!dst)
    return;
#pragma unroll
  for (int m = 0; m < STATE_PER_THREAD; ++m) {
    const int e = threadIdx.x + m * THREADS, i = e / BV, j = e % BV;
    if (e < d.K * BV)
      dst[at_state(n, hd, i, v0 + j, d)] = x[m];
  }
}

/// The tile copied into shared memory (entry i, j at tile[i][j]) for the whole block to read.
/// The caller synchronises before (the previous copy no longer read) and after.
__device__ inline void share_state_tile(const float (&x)[STATE_PER_THREAD], float (*tile)[BV],
                                        const ChunkDims &d) {
#pragma unroll
  for (int m = 0; m < STATE_PER_THREAD; ++m) {
    const int e = threadIdx.x + m * THREADS;
    if (e < d.K * BV)
      tile[e / BV][e % BV] = x[m];
  }
}

/// x_rc exp(g_cum_last,c - g_cum_rc): row r's key c decayed to the chunk's last row.
template <class In>
__device__ inline float decayed_to_end(const In *x, const float *g_cum, int r, int last, int hd,
                                       int c, const ChunkDims &d) {
  return load(x, at_k(r, hd, c, d)) * expf(gate(g_cum, last, hd, c, d) - gate(g_cum, r, hd, c, d));
}

/// x_ij <- exp(g_cum_last,i) x_ij + sum_{r < n} left_ri right_rj, in that order: the decay of
/// a chunk, then what its n rows add (left: C x K, right: C x BV, in shared memory).
__device__ inline void decay_and_add(float (&x)[STATE_PER_THREAD], const float (*left)[MAX_K],
                                     const float (*right)[BV], int n, const float *g_cum, int last,
                                     int hd, const ChunkDims &d) {
#pragma unroll
  for (int m = 0; m < STATE_PER_THREAD; ++m) {
    const int e = threadIdx.x + m * THREADS, i = e / BV, j = e % BV;
    if (e < d.K * BV) {
      float acc = expf(gate(g_cum, last, hd, i, d)) * x[m];
      for (int r = 0; r < n; ++r)
        acc += left[r][i] * right[r][j];
      x[m] = acc;
    }
  }
}

constexpr int KS = 32; // key columns a slice stages in shared memory (K is a multiple)

/// \brief KS key columns of a chunk's rows in shared memory: q~ (or q~ . e^g_cum), k and
/// g_cum. Each row is padded by one float so that a warp reading 32 rows of one column hits
/// 32 banks.
struct KeySlices {
  float q[C][KS + 1], k[C][KS + 1], g[C][KS + 1];
};

/// A_ij = sum_c (scale l_ic) r_jc exp(g_cum_ic - g_cum_jc) for j <= i < n (j < i when
/// `strictly_lower`), zero elsewhere, into shared memory (all C x C entries) and, when A_out is
/// given, into a stage. The keys go through `s` KS columns at a time; each thread keeps its C *
/// C / THREADS entries in registers, so every entry still sums its terms in key order. Ends
/// synchronised: A is visible to the block and `s` free for other use.
template <class In>
__device__ void decayed_scores(const In *l, float scale, const In *r, const float *g_cum,
                               ChunkRows rows, int hd, const ChunkDims &d, bool strictly_lower,
                               float (*A)[C], float *A_out, KeySlices &s) {
  constexpr int PAIRS = C * C / THREADS;
  float a[PAIRS] = {};
  for (int c0 = 0; c0 < d.K; c0 += KS) {
    __syncthreads(); // the previous slice is no longer read
    for (int e = threadIdx.x; e < rows.n * KS; e += blockDim.x) {
      const int row = e / KS, col = e % KS, at = rows.bos + row;
      s.q[row][col] = load(l, at_k(at, hd, c0 + col, d)) * scale;
      s.k[row][col] = load(r, at_k(at, hd, c0 + col, d));
      s.g[row][col] = gate(g_cum, at, hd, c0 + col, d);
    }
    __syncthreads();
#pragma unroll
    for (int p = 0; p < PAIRS; ++p) {
      const int e = threadIdx.x + p * THREADS, i = e / C, j = e % C;
      if (i < rows.n && (strictly_lower ? j < i : j <= i))
        for (int col = 0; col < KS; ++col)
          a[p] += s.q[i][col] * s.k[j][col] * expf(s.g[i][col] - s.g[j][col]);
    }
  }
#pragma unroll
  for (int p = 0; p < PAIRS; ++p) {
    const int e = threadIdx.x + p * THREADS, i = e / C, j = e % C;
    A[i][j] = a[p];
    if (A_out && i < rows.n)
      A_out[at_score(rows.bos + i, hd, j, d)] = a[p];
  }
  __syncthreads();
}

/// The chunk's scores A_ij = sum_c q~_ic k_jc exp(g_cum_ic - g_cum_jc), j <= i (as
/// decayed_scores).
template <class In>
__device__ void chunk_scores(const In *q, const In *k, const float *g_cum, ChunkRows rows, int hd,
                             const ChunkDims &d, float (*A)[C], float *A_out, KeySlices &s) {
  decayed_scores(q, d.scale, k, g_cum, rows, hd, d, false, A, A_out, s);
}

/// out_i,c0+col = sum_{m<=i} A_im x_m,col for the rows i < n of a chunk and the KS columns of a
/// slice x in shared memory, in m order; `put(i, col, value)` stores each. The caller
/// synchronises before (x staged) and after (x free).
template <class Put>
__device__ void lower_times_slice(const float (*A)[C], const float (*x)[KS + 1], int n, Put put) {
  for (int e = threadIdx.x; e < n * KS; e += blockDim.x) {
    const int i = e / KS, col = e % KS;
    float acc = 0;
    for (int m = 0; m <= i; ++m)
      acc += A[i][m] * x[m][col];
    put(i, col, acc);
  }
}

// ---------------------------------------------------------------------------------------
// chunk_fwd_o: grid (NC, H), THREADS threads; one chunk of one head. Val is the value's type:
// the input type for gla (v), fp32 for the delta rules (v_new).
//   o_i = sum_c q~_ic exp(g_cum_ic) h_c + sum_{j<=i} A_ij v_j
// Each thread keeps its C * V / THREADS outputs in registers (output e = tid + m THREADS is
// row e / V, column e % V) while q~ . e^g_cum goes through shared memory KS keys at a time.
template <class In, class Val>
__global__ void chunk_fwd_o_kernel(const In *q, const In *k, const Val *v, const float *g_cum,
                                   const float *h, In *o, float *A_out, DeviceChunkTable t,
                                   ChunkDims d) {
  constexpr int OUTS = C * MAX_K / THREADS;
  __shared__ float A[C][C];
  __shared__ KeySlices s;
  const int c = blockIdx.x, hd = blockIdx.y, tid = threadIdx.x;
  const ChunkRows rows = chunk_rows(t, c);
  chunk_scores(q, k, g_cum, rows, hd, d, A, A_out, s);
  float acc[OUTS] = {};
  for (int c0 = 0; c0 < d.K; c0 += KS) { // (q~ . e^g_cum) h: the state carried in
    __syncthreads();
    for (int e = tid; e < rows.n * KS; e += THREADS) {
      const int r = e / KS, col = e % KS;
      s.q[r][col] = (load(q, at_k(rows.bos + r, hd, c0 + col, d)) * d.scale) *
                    expf(gate(g_cum, rows.bos + r, hd, c0 + col, d));
    }
    __syncthreads();
#pragma unroll
    for (int m = 0; m < OUTS; ++m) {
      const int e = tid + m * THREADS, i = e / d.V, j = e % d.V;
      if (i < rows.n)
        for (int col = 0; col < KS; ++col)
          acc[m] += s.q[i][col] * h[at_state(c, hd, c0 + col, j, d)];
    }
  }
#pragma unroll
  for (int m = 0; m < OUTS; ++m) { // A v: inside the chunk
    const int e = tid + m * THREADS, i = e / d.V, j = e % d.V;
    if (i < rows.n) {
      for (int jj = 0; jj <= i; ++jj)
        acc[m] += A[i][jj] * load(v, at_v(rows.bos + jj, hd, j, d));
      store(o, at_v(rows.bos + i, hd, j, d), acc[m]);
    }
  }
}

/// solve_tril in shared memory: A = (I + A0)^-1 for the strictly lower A0 of a chunk of n
/// rows, A set to the identity beforehand. Column j of A needs column j alone, A_ij =
/// -sum_{j<=m<i} A0_im A_mj from the top down, so thread j (< n) solves column j. The caller
/// synchronises before and after.
__device__ inline void solve_tril(const float (*A0)[C], float (*A)[C], int n) {
  if (threadIdx.x < n) {
    const int j = threadIdx.x;
    for (int i = j + 1; i < n; ++i) {
      float acc = 0;
      for (int m = j; m < i; ++m)
        acc += A0[i][m] * A[m][j];
      A[i][j] = -acc;
    }
  }
}

inline void check_status(cudaError_t status, const char *what) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

inline void check(const char *kernel) { check_status(cudaGetLastError(), kernel); }

/// Lets `kernel` take `bytes` of dynamic shared memory, beyond the 48 KB every kernel may.
/// The most dynamic shared memory a block may ask for on Hopper (sm_90): 227 KiB (CUDA C++
/// Programming Guide, "Compute Capability 9.0").
constexpr int max_shared_bytes = 227 * 1024;

/// Set once a device, kernel and size: a call of the host API queues its kernels with no driver
/// call of its own before them.
template <class Kernel> void allow_shared_memory(Kernel *kernel, int bytes, const char *name) {
  static std::mutex lock;
  static std::set<std::tuple<int, const void *, int>> allowed;
  int device = 0;
  check_status(cudaGetDevice(&device), name);
  const auto key = std::make_tuple(device, reinterpret_cast<const void *>(kernel), bytes);
  std::lock_guard<std::mutex> guard(lock);
  if (allowed.count(key))
    return;
  check_status(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes),
               (std::string(name) + ": shared memory").c_str());
  allowed.insert(key);
}

inline void check_sync(const char *kernel) {
  check(kernel);
  check_status(cudaDeviceSynchronize(), kernel);
}

inline dim3 state_grid(const DeviceChunkTable &t, const ChunkDims &d) {
  return dim3(t.N, d.H, d.V / BV);
}

/// f(In{}) with In the input type of the call (fp16 or bf16): each launcher launches its
/// kernel<In> once, inside f, on pointers cast by in<In> and out<In>.
template <class F> void with_input_type(const ChunkDims &d, F f) {
  if (d.fp16)
    f(__half{});
  else
    f(__nv_bfloat16{});
}

/// f(In{}, K{}, V{}) with In the input type of the call and K, V its sizes (64 or 128) as
/// std::integral_constant: each launcher instantiates its kernel<In, K, V> once, inside f.
template <class F> void with_sizes(const ChunkDims &d, F f) {
  using S64 = std::integral_constant<int, 64>;
  using S128 = std::integral_constant<int, 128>;
  with_input_type(d, [&](auto y) {
    if (d.K == 64)
      d.V == 64 ? f(y, S64{}, S64{}) : f(y, S64{}, S128{});
    else
      d.V == 64 ? f(y, S128{}, S64{}) : f(y, S128{}, S128{});
  });
}

template <class In> const In *in(const void *p) { return static_cast<const In *>(p); }
template <class In> In *out(void *p) { return static_cast<In *>(p); }

} // namespace ruleproof::gpu::detail
