// ruleproof: gated_oja's output on tensor cores, Hopper (sm_90): chunk_oja_fwd_o of every chunk at
// once, the last kernel of the path KernelPath::tensor_cores of chunk_gated_oja_fwd
// (gpu/chunk_gated_oja.hpp; the CUDA-core path is gpu/chunk_gated_oja.cu). Every matrix product
// runs as mma.sync m16n8k16 with operands in the input type (bf16 or fp16) and fp32 sums
// (gpu/detail/mma.cuh); gates and their exponentials stay fp32. Judged under the tensor-core
// policy (gpu/twin.hpp).
//
// CPU reference, one grep away: reference/gated_oja/chunk.hpp (chunk_oja_fwd_o), seed 000's
// VO-RoPE output.
//
// Before it, on the same path (gpu/chunk_gated_oja.cpp): kda's tensor-core forward without its
// output on keys and values exchanged (chunk_delta_tc_states: the WY kernel and the sequential
// kernel forwards), which stores the state at each chunk's start, transposed ([V, K], the delta
// kernels' layout), and k_new = u - w h^T, both in the input type. Per chunk of n <= 64 rows,
// g_cum its local cumulative gate per value, q~ = scale q, h the state at the chunk's start [K,
// V]:
//   P    = q~ k_new^T  (i <= r)
//   o_rc = e^{g_cum_rc} (q~_r . h_c) + sum_{i <= r} P_ri v_ic e^{g_cum_rc - g_cum_ic}
// The per-value decays of the second term are split at 16-row sub-chunks against each
// sub-chunk's first row, as gla's backward splits dq's (lower_decayed_product of
// gpu/detail/gla_tc.cuh; gpu/chunk_gla_bwd_tc.cu's header argues the bounds): every factor
// outside the product is at most 1, the right factor v_i e^{g_cum_r - g_cum_i} is at most |v_i|
// below the diagonal block, and the block's rows whose factor could pass the input type's range
// are summed term by term in fp32 (lower_left_out); P's diagonal is added apart, in fp32.
//
// chunk_oja_fwd_o_tc_kernel: grid (NC SPLIT, H), 8 warps; a block owns V / SPLIT of o's value
// columns (SPLIT = 4 by default: 69 KB at K = V = 128, against 132 KB and one block an SM for the
// whole row; on an H100 the kernel takes 431-434 us at SPLIT 4, 452-458 at 2, 692-701 at 1;
// RULEPROOF_OJA_SPLIT=1 or 2 takes another), and makes P whole; warp w owns rows [16 (w % 4),
// +16) and half the block's value columns (w / 4), and the column tiles of parity w / 4 of P.
// Every operand of the chunk is copied into shared memory at once (cp.async); the blocks of a
// chunk are neighbours in the grid, so that q and k_new come from memory once. Where a row's
// spread is wide is decided on the block's columns, whose factors it bounds.
#include <cstdlib>
#include <string_view>

#include "detail/chunk_device.cuh" // chunk_rows, check, allow_shared_memory, with_sizes,
                                   // in, out, C, max_shared_bytes
#include "detail/gated_oja_launch.hpp"
#include "detail/gla_tc.cuh" // to, val, fast_exp, copy_rows_async, ChunkGates, copy_gates_async, sum_chunk_gates,
                             // wide_rows, lower_rows_times_transposed, rows_times_transposed,
                             // lower_decayed_product, lower_left_out, lower_decayed_entry,
                             // each_entry_of_side, store_rows, PAD, SUB
#include "detail/mma.cuh"

namespace ruleproof::gpu::detail {

namespace {

using namespace tc;

constexpr int OJA_THREADS = 256;

/// The shared memory of a block taking VB = V / SPLIT value columns.
template <class T, int K, int VB> struct OjaOutputShared {
  static constexpr int LK = K + PAD, LV = VB + PAD, LC = C + PAD;
  T q[C][LK], k_new[C][LK];
  T h[VB][LK]; // the state at the chunk's start, transposed: the block's value rows
  T v[C][LV];  // the block's value columns
  T p[C][LC];  // P below the diagonal
  float p_diagonal[C];
  ChunkGates<VB> gates; // per value, the block's columns
};

template <class In, int K, int V, int SPLIT>
__global__ void __launch_bounds__(OJA_THREADS, SPLIT == 1 ? 1 : 2)
    chunk_oja_fwd_o_tc_kernel(const In *q, const In *v, const In *k_new, const In *h_vk,
                              const float *g, In *o, DeviceChunkTable t, ChunkDims d) {
  constexpr int VB = V / SPLIT; // the block's value columns
  using S = OjaOutputShared<In, K, VB>;
  constexpr int NV = VB / 16; // n tiles of a warp's half of the block's columns
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  S &s = *reinterpret_cast<S *>(shared_bytes);
  const int c = blockIdx.x / SPLIT, hd = blockIdx.y, warp = threadIdx.x / 32;
  const int col_base = VB * (blockIdx.x % SPLIT); // the block's first value column
  const ChunkRows rows = chunk_rows(t, c);
  const int n = rows.n;
  const long row_at = static_cast<long>(rows.bos) * d.H + hd; // row bos of head hd
  const long stride_k = static_cast<long>(d.H) * K, stride_v = static_cast<long>(d.H) * V;
  // the gates first, and summed while the rest arrive
  copy_gates_async<VB, false>(s.gates, g + col_base, rows, hd, d, V);
  mma::commit_copies();
  copy_rows_async(&s.q[0][0], S::LK, q + row_at * K, stride_k, C, n, K);
  copy_rows_async(&s.k_new[0][0], S::LK, k_new + row_at * K, stride_k, C, n, K);
  copy_rows_async(&s.v[0][0], S::LV, v + row_at * V + col_base, stride_v, C, n, VB);
  copy_rows_async(&s.h[0][0], S::LK,
                  h_vk + (static_cast<long>(c) * d.H + hd) * V * K +
                      static_cast<long>(col_base) * K,
                  K, VB, VB, K);
  mma::commit_copies();
  mma::wait_copies_but_last(); // the gates
  sum_chunk_gates<VB, false>(s.gates, rows, hd, d, nullptr, V);
  mma::wait_copies();
  __syncthreads();
  const float(*g_cum)[ChunkGates<VB>::LG] = s.gates.g;
  const float scale = d.scale;
  const int row0 = SUB * (warp % 4), side = warp / 4, vcol0 = VB / 2 * side;

  // -- P = q~ k_new^T: its diagonal in fp32, below it in the input type
  {
    mma::Acc acc[C / 8];
    lower_rows_times_transposed(acc, &s.q[0][0], S::LK, row0, &s.k_new[0][0], S::LK, side, K);
    each_entry_of_side(acc, row0, side, [&](int i, int j, float y) {
      if (j == i)
        s.p_diagonal[i] = scale * y;
      s.p[i][j] = to<In>(j < i ? scale * y : 0.0f);
    });
  }
  __syncthreads();

  // -- o = e^{g_cum} . (q~ h) + (P . R) v on the warp's rows and value columns
  const unsigned suffix =
      wide_rows<In, VB>(g_cum, row0, row0, 1.0f, factor_magnitude<In, VB>(&s.v[0][0], S::LV, row0));
  mma::Acc state[NV], scores[NV];
  rows_times_transposed(state, &s.q[0][0], S::LK, row0, &s.h[0][0], S::LK, vcol0, K);
  float left_out[NV * 4];
  lower_decayed_product(scores, &s.p[0][0], S::LC, &s.v[0][0], S::LV, g_cum, row0, vcol0, suffix);
  if (suffix)
    lower_left_out(left_out, &s.p[0][0], S::LC, &s.v[0][0], S::LV, g_cum, row0, vcol0, suffix);
#pragma unroll
  for (int nt = 0; nt < NV; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int i = row0 + mma::acc_row(e), col = vcol0 + nt * 8 + mma::acc_col(e);
#ifdef RULEPROOF_PLANTED_BUG // gpu_check_planted only: a deliberate bug, P's diagonal left out
      const float diagonal = 0.0f;
#else
      const float diagonal = s.p_diagonal[i] * val(s.v[i][col]);
#endif
      state[nt].x[e] =
          scale * fast_exp(g_cum[i][col]) * state[nt].x[e] +
          lower_decayed_entry(scores[nt].x[e], g_cum, row0, i, col, suffix, left_out, 4 * nt + e) +
          diagonal;
    }
  store_rows(o + col_base, state, row0, vcol0, n, row_at * V, stride_v,
             [](int, int, float y) { return y; });
}

template <class In, int K, int V, int SPLIT>
void launch(const void *q, const void *v, const void *k_new, const void *h_vk, const float *g,
            void *o, const DeviceChunkTable &t, const ChunkDims &d) {
  static_assert(sizeof(OjaOutputShared<In, K, V / SPLIT>) <= max_shared_bytes);
  const int bytes = static_cast<int>(sizeof(OjaOutputShared<In, K, V / SPLIT>));
  auto *kernel = chunk_oja_fwd_o_tc_kernel<In, K, V, SPLIT>;
  allow_shared_memory(kernel, bytes, "chunk_oja_fwd_o_tc_kernel");
  kernel<<<dim3(t.NC * SPLIT, d.H), OJA_THREADS, bytes>>>(in<In>(q), in<In>(v), in<In>(k_new),
                                                          in<In>(h_vk), g, out<In>(o), t, d);
}

/// The blocks a chunk's output takes: 4 by default; RULEPROOF_OJA_SPLIT=1 (the whole row, the
/// kernel before) or 2 in the environment, kept while the split is new.
int oja_split() {
  static const int split = [] {
    const char *e = std::getenv("RULEPROOF_OJA_SPLIT");
    const std::string_view x = e ? e : "";
    return x == "1" ? 1 : x == "2" ? 2 : 4;
  }();
  return split;
}

} // namespace

void launch_chunk_oja_fwd_o_tc(const void *q, const void *v, const void *k_new, const void *h_vk,
                               const float *g, void *o, const DeviceChunkTable &t,
                               const ChunkDims &d) {
  if (t.NC == 0)
    return;
  with_sizes(d, [&](auto x, auto ks, auto vs) {
    using In = decltype(x);
    constexpr int K = decltype(ks)::value, V = decltype(vs)::value;
    switch (oja_split()) {
    case 1: return launch<In, K, V, 1>(q, v, k_new, h_vk, g, o, t, d);
    case 4: return launch<In, K, V, 4>(q, v, k_new, h_vk, g, o, t, d);
    default: return launch<In, K, V, 2>(q, v, k_new, h_vk, g, o, t, d);
    }
  });
  check("chunk_oja_fwd_o_tc_kernel");
}

} // namespace ruleproof::gpu::detail
