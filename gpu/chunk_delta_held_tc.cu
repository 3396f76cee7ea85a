// ruleproof: gated_delta_rule's forward with the state held in registers (sm_90a):
// chunk_delta_held_tc_kernel. The CPU reference, one grep away: reference/kda/chunk.hpp
// (recompute_w_u, chunk_delta_fwd_h, chunk_fwd_o), seed 003's forward steps 3-5, with the gate
// repeated over the keys (reference/kda/variant.hpp), given A = (I + A0)^-1 of every chunk
// (launch_chunk_delta_a_tc, gpu/chunk_delta_tc.cu, run first; RULEPROOF_DELTA_FORWARD=held, the
// default on compute capability 9.0). Its plain form (PLAIN, launch_chunk_gla_held_tc) is
// simple_gla's forward (reference/gla/chunk.hpp, chunk_forward_pass, the gate repeated over the
// keys: reference/simple_gla/simple_gla.hpp): v_new = v, no A, no beta.
//
// The state is held transposed, h^T (a block's 64 value columns by the K keys), in the wgmma
// accumulators of one warpgroup for the whole sequence, and every product of its chunk step takes
// its left factor from registers (m64n64k16_rs): h^T itself, rounded to the input type, and what
// the step makes from it. No WY factor is formed: since u = A Diag(beta) v and w = A Diag(beta)
// (k . e^{g_cum}),
//   v_new = u - w h = A x,   x = Diag(beta) (v - e^{g_cum} . (k h))       (recompute_w_u, step 4)
// so that per chunk of n <= 64 rows, with g_cum its local cumulative gate and gl that of its last
// row,
//   (k h)^T = h^T k^T                 x^T = (v^T - (k h)^T Diag(e^{g_cum})) Diag(beta)
//   v_new^T = x^T A^T                 o^T = scale (h^T q^T) Diag(e^{g_cum}) + v_new^T Aqk^T
//   h'^T = e^{gl} h^T + (v_new^T Diag(e^{gl - g_cum})) k                          (step 4, step 5)
// with Aqk_ij = scale (q k^T)_ij e^{g_cum_i - g_cum_j} (j <= i). It rounds to the input type the
// state's copy at a chunk's start, x, v_new, v_new . e^{gl - g_cum} and Aqk: where the other forms
// round u, w and their factors it rounds x, a difference whose size the tensor-core policy's twin
// bounds as it bounds theirs (gpu/twin.hpp: an output passes within a factor of the twin's error,
// not on the twin's bits). Nothing is written but o, the final state and, for the backward, Aqk,
// from the same sums as the states form of gpu/chunk_delta_fused_tc.cu makes it.
//
// A block takes one sequence, one head and 64 of the values' columns (grid N x H x V / 64), two
// warpgroups, each its own loop over the chunks:
//   state (warpgroup 0): for chunk c, h^T k^T and h^T q^T, then x, v_new, the output and h's
//     update, each product waited for before the next that reads it; a whole chunk's output
//     stored transposed (stmatrix) into a 128-byte-swizzled tile of its parity and copied out by
//     one Tensor Memory Accelerator store (a sequence's last, shorter chunk straight from the
//     accumulators); the descriptors of its tiles made once and moved to each place and step
//     (wgmma::moved);
//   chunks (warpgroup 1), a chunk ahead of the state's: for chunk c (while the state's warpgroup
//     works on chunk c - 1), its rows past the sequence's end zeroed, q k^T issued, its g_cum and
//     factors made by the first warp while q k^T runs, and Aqk made (all of a thread's entries
//     before it stores any) and handed to the state's warpgroup; then, once the state's
//     warpgroup is done with chunk c - 1, the copies of chunk c + 2 into its places: q, k, v and
//     A by the Tensor Memory Accelerator, a tile an instruction (tma::encode_swizzled_tiles_map:
//     with the 64-row boxes of 8 columns of the fused kernel, issuing 48 boxes took about 1,600
//     cycles of a 6,600-cycle step), the gates and beta by cp.async.
// On an H100 at B 4, T 4096, H 16, K = V = 128, bf16: gated_delta_rule's forward 0.225-0.232 ms
// (this kernel 149-163 us after the A kernel's 81), simple_gla's 0.131-0.135 ms, against
// 0.301-0.303 and 0.198-0.200 ms for 4533b47's form of this kernel in the same run (its tiles
// without swizzle, the gates made before q k^T was issued, Aqk stored as made); the step of the
// chunks warpgroup, which set the pace, went from 5,524 to 4,042 cycles (reports/gpu/
// tensor_core.md, "The tiles swizzled, and the chunks warpgroup's step shortened").
// The tiles of a chunk sit in the places of index c % 3; three mbarriers a place: `full` (the
// copies' bytes), `ready` (the chunks warpgroup's Aqk and factors) and `empty` (the state's
// warpgroup is done with the place, which may take chunk c + 3's copies). The copied tiles lie in
// 128-byte-swizzled panels (wgmma::swizzled_at), which the copies fill a whole 128-byte row at a
// time: in wgmma's core-matrix layout without swizzle, each copied row was 16 bytes, half an L2
// sector, and L2 was the kernel's busiest unit (84.8% of its peak; reports/gpu/tensor_core.md,
// "The tiles swizzled"). Aqk, which the chunks warpgroup stores, keeps that layout. v is read into
// the layout of h^T k^T's accumulators by ldmatrix.trans.
#include <cstdint>

#include "detail/chunk_device.cuh" // at_v, at_state, at_score, sequence_chunk_rows, check,
                                   // allow_shared_memory, with_sizes, C
#include "detail/delta_launch.hpp"
#include "detail/gla_tc.cuh" // to, val
#include "detail/mma.cuh"    // copy_async, commit_copies, pack_rounded, barrier_sync
#include "detail/tma.cuh"
#include "detail/warpgroup_tc.cuh" // issue_product, AccGates, zero_rows_past, chunk_gate_scan
#include "detail/wgmma.cuh"

namespace ruleproof::gpu::detail {

namespace {

using warpgroup::AccGates;
using warpgroup::chunk_gate_scan;
using warpgroup::issue_product;
using warpgroup::zero_rows_past_swizzled;

constexpr int HELD_BV = 64; // the values' columns of a block: the rows of h^T
constexpr int HELD_THREADS = 2 * warpgroup::SIZE;
constexpr int PLACES = 3;         // chunks c, c + 1 and c + 2
constexpr int CHUNKS_BARRIER = 1; // the chunks warpgroup's own
constexpr int STATE_BARRIER = 2;  // the state's warpgroup's own

template <class T, int K> struct alignas(1024) HeldShared {
  // the copied tiles, in 128-byte-swizzled panels (wgmma::swizzled_at), each 1024-byte aligned
  T k[PLACES][C * K];
  T q[PLACES][C * K];
  T v[PLACES][C * HELD_BV];
  T a16[PLACES][C * C]; // A in the input type
  T aqk[PLACES][C * C]; // the chunks warpgroup's scores, in the core-matrix layout (k_major_at)
  T o[2][C * HELD_BV];  // the output of chunks of each parity, swizzled, stored by one copy each
  float g_raw[PLACES][C], beta[PLACES][C];
  float g_cum[PLACES][C], up[PLACES][C], to_end[PLACES][C], decay[PLACES];
  std::uint64_t full[PLACES], ready[PLACES], empty[PLACES];
};
// the Tensor Memory Accelerator's swizzled destinations: 1024-byte aligned, a panel too
using HeldBf16K128 = HeldShared<__nv_bfloat16, 128>;
using HeldBf16K64 = HeldShared<__nv_bfloat16, 64>;
static_assert(offsetof(HeldBf16K128, q) % 1024 == 0 && offsetof(HeldBf16K128, v) % 1024 == 0 &&
              offsetof(HeldBf16K128, a16) % 1024 == 0 && offsetof(HeldBf16K64, q) % 1024 == 0 &&
              offsetof(HeldBf16K64, v) % 1024 == 0 && offsetof(HeldBf16K64, a16) % 1024 == 0 &&
              C * 64 * 2 % 1024 == 0);
constexpr int SWIZZLE_ALIGN = 1024; // the dynamic shared memory rounded up to it

/// Two 16-bit values of a register, low then high, in fp32.
__device__ inline void unpack(std::uint32_t x, __nv_bfloat16, float &lo, float &hi) {
  const __nv_bfloat162 y = *reinterpret_cast<const __nv_bfloat162 *>(&x);
  lo = __low2float(y);
  hi = __high2float(y);
}
__device__ inline void unpack(std::uint32_t x, __half, float &lo, float &hi) {
  const __half2 y = *reinterpret_cast<const __half2 *>(&x);
  lo = __low2float(y);
  hi = __high2float(y);
}

/// v^T at this thread's entries of a 64 x 64 accumulator whose rows are a block's value columns
/// and whose columns are a chunk's rows (h^T k^T's), from v's tile (64 rows by 64 value columns,
/// one 128-byte-swizzled panel) by ldmatrix.trans: x[4 p + r] holds entries 8 p + 2 r and 8 p + 2 r
/// + 1.
template <class T> __device__ inline void load_v_transposed(std::uint32_t (&x)[16], const T *v) {
  const int lane = threadIdx.x % 32, warp = (threadIdx.x % warpgroup::SIZE) / 32;
  const int m = lane / 8; // the 8 x 8 piece this lane addresses: its rows, 8 of the chunk's
#pragma unroll
  for (int p = 0; p < 4; ++p) {
    const int row = 8 * (2 * p + m / 2) + lane % 8, column = 16 * warp + 8 * (m % 2);
    const T *at = v + wgmma::swizzled_at<C>(row, column);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(x[4 * p]), "=r"(x[4 * p + 1]), "=r"(x[4 * p + 2]), "=r"(x[4 * p + 3])
                 : "r"(mma::shared_address(at)));
  }
}

template <class In, int K, int V, bool PLAIN>
__global__ void __launch_bounds__(HELD_THREADS, 1)
    chunk_delta_held_tc_kernel(DeltaFusedPass p, DeviceChunkTable t, ChunkDims d,
                               const __grid_constant__ CUtensorMap q_map,
                               const __grid_constant__ CUtensorMap k_map,
                               const __grid_constant__ CUtensorMap v_map,
                               const __grid_constant__ CUtensorMap a_map,
                               const __grid_constant__ CUtensorMap o_map) {
  using S = HeldShared<In, K>;
  constexpr int WG = warpgroup::SIZE, KS = K / 16, M = K / 64;
  extern __shared__ __align__(128) unsigned char shared_bytes[];
  S &s = *reinterpret_cast<S *>(
      shared_bytes +
      (SWIZZLE_ALIGN - mma::shared_address(shared_bytes) % SWIZZLE_ALIGN) % SWIZZLE_ALIGN);
  const int n_seq = blockIdx.x, hd = blockIdx.y, v0 = blockIdx.z * HELD_BV;
  const int tid = threadIdx.x % WG;
  const int chunks = t.seq_first_chunk[n_seq + 1] - t.seq_first_chunk[n_seq];
  const int seq_bos = t.seq_bos[n_seq], seq_eos = t.seq_eos[n_seq];
  const auto rows_of = [&](int c) { return sequence_chunk_rows(seq_bos, seq_eos, c); };
  // the timeline (a diagnostic, DeltaFusedPass::timeline): block (0, 0, 0)'s SM cycles since its
  // start at the end of each phase, by one thread of the warpgroup that runs it (FusedEvent's
  // places: the chunks warpgroup's in WY_*, the state's in STATE_* and OUTPUT_STORED)
  const bool timed = p.timeline && blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0;
  const long long started = clock64();
  const auto mark = [&](int c, FusedEvent event, bool by_this_thread) {
    if (timed && by_this_thread && c < fused_timeline_chunks)
      p.timeline[c * fused_timeline_events + event] = static_cast<float>(clock64() - started);
  };

  // each tile's descriptor made once, at place 0, and moved to a place (KB, AB bytes apart) and a
  // step (wgmma::moved): the keys K-major and, for h's update, MN-major
  constexpr int KB = C * K * 2, AB = C * C * 2;
  const std::uint64_t k_desc = wgmma::k_major_swizzled<C>(s.k[0], 0),
                      q_desc = wgmma::k_major_swizzled<C>(s.q[0], 0),
                      kt_desc = wgmma::mn_major_swizzled<C>(s.k[0], 0),
                      a_desc = wgmma::k_major_swizzled<C>(s.a16[0], 0),
                      aqk_desc = wgmma::k_major<C>(s.aqk[0], 0);
  static_assert(sizeof(s.k[0]) == KB && sizeof(s.q[0]) == KB && sizeof(s.a16[0]) == AB &&
                sizeof(s.aqk[0]) == AB);

  if (threadIdx.x == 0) {
    for (int b = 0; b < PLACES; ++b) {
      tma::init_barrier(&s.full[b], 1);
      tma::init_barrier(&s.ready[b], WG);
      tma::init_barrier(&s.empty[b], WG);
    }
  }
  __syncthreads();

  if (threadIdx.x >= WG) { // -- the chunks warpgroup
    // chunk c's tiles into the places of index c % 3, and its gates and beta (one group of
    // cp.async a chunk, closed by the caller)
    const auto copy_chunk = [&](int c) {
      const int at = c % PLACES;
      const ChunkRows rows = rows_of(c);
      if (tid == 0) {                    // a tile an instruction (encode_swizzled_tiles_map)
        wgmma::fence_shared_for_async(); // the place's earlier reads before the copy's writes
        tma::arrive_expecting(&s.full[at], (2 * C * K + C * HELD_BV + (PLAIN ? 0 : C * C)) * 2);
        tma::copy_tile_swizzled(s.k[at], k_map, hd * K, rows.bos, &s.full[at]);
        tma::copy_tile_swizzled(s.q[at], q_map, hd * K, rows.bos, &s.full[at]);
        tma::copy_tile_swizzled(s.v[at], v_map, hd * V + v0, rows.bos, &s.full[at]);
        if constexpr (!PLAIN)
          tma::copy_tile_swizzled(s.a16[at], a_map, hd * C, rows.bos, &s.full[at]);
      }
      if (tid < C) {
        const long row = static_cast<long>(rows.bos + (tid < rows.n ? tid : 0)) * d.H + hd;
        mma::copy_async<4>(&s.g_raw[at][tid], p.g + row, tid >= rows.n);
        if constexpr (!PLAIN)
          mma::copy_async<4>(&s.beta[at][tid], p.beta + row, tid >= rows.n);
      }
    };
    In *Aqk = static_cast<In *>(p.Aqk);
    // Aqk, where p.Aqk is given, is stored by the blocks of a sequence and head, each its share of
    // the rows (the same sums in each block)
    const int aqk_from = C * int(blockIdx.z) / int(gridDim.z),
              aqk_to = C * (int(blockIdx.z) + 1) / int(gridDim.z);
    for (int c = 0; c < 2; ++c) {
      if (c < chunks)
        copy_chunk(c);
      mma::commit_copies();
    }
    for (int c = 0; c < chunks; ++c) {
      const int at = c % PLACES;
      const ChunkRows rows = rows_of(c);
      mark(c, WY_START, tid == 0);
      mma::wait_copies_but_last(); // chunk c's gates and beta (c + 1's on their way)
      tma::wait_barrier(&s.full[at], (c / PLACES) & 1);
      mark(c, WY_WAITED, tid == 0);
      // the rows past the sequence's end, the next sequence's: zero, as copy_tile would write
      zero_rows_past_swizzled<C, K>(s.k[at], rows.n, tid);
      zero_rows_past_swizzled<C, K>(s.q[at], rows.n, tid);
      zero_rows_past_swizzled<C, HELD_BV>(s.v[at], rows.n, tid);
      if constexpr (!PLAIN)
        zero_rows_past_swizzled<C, C>(s.a16[at], rows.n, tid);
      wgmma::fence_shared_for_async();
      mma::barrier_sync(CHUNKS_BARRIER, WG); // every thread's gates, beta and zeroed rows in
      mark(c, WY_KK, tid == 0);
      // q k^T first, and the first warp makes the gates while it runs
      float sacc[32];
      wgmma::fence();
      issue_product<In, false>(
          sacc, K,
          [&](int k0) {
            return wgmma::moved(q_desc, at * KB + wgmma::k_major_swizzled_offset<C>(k0));
          },
          [&](int k0) {
            return wgmma::moved(k_desc, at * KB + wgmma::k_major_swizzled_offset<C>(k0));
          },
          false);
      wgmma::commit();
      mark(c, WY_A0, tid == 0); // (q k^T issued)
      if (tid < 32) {           // g_cum and each row's factors (chunk_gate_scan), and e^{gl}
        const float gl =
            chunk_gate_scan(s.g_raw[at], tid, [&](int i, float g, float up, float to_end) {
              s.g_cum[at][i] = g;
              s.up[at][i] = up;
              s.to_end[at][i] = to_end;
            });
        if (tid == 0)
          s.decay[at] = expf(gl);
      }
      mark(c, WY_W, tid == 0); // (the gates made)
      wgmma::wait<0>();
      mark(c, WY_SOLVE, tid == 0);           // (q k^T done)
      mma::barrier_sync(CHUNKS_BARRIER, WG); // g_cum is in
      mark(c, WY_FACTORS, tid == 0);
      // Aqk_ij = scale (q k^T)_ij e^{g_cum_i - g_cum_j} (j <= i), this thread's pairs, all made
      // before any is stored (no branch between them)
      const AccGates gates(s.g_cum[at]);
      std::uint32_t aqk[16];
#pragma unroll
      for (int e = 0; e < 32; e += 2) {
        const int i = wgmma::d_row(e), j = wgmma::d_col(e);
#ifdef RULEPROOF_PLANTED_BUG // gpu_check_planted only: a deliberate bug, the plain form's
                             // (simple_gla's) scores without their diagonal
        const auto kept = [&](int col) { return PLAIN ? col < i : col <= i; };
#else
        const auto kept = [&](int col) { return col <= i; };
#endif
        const auto score = [&](int u) {
          const float x = sacc[e + u] * d.scale * gates.decay(e + u); // (inf or NaN above i)
          return kept(j + u) ? x : 0.0f;
        };
        aqk[e / 2] = mma::pack_rounded<In>(score(0), score(1));
      }
#pragma unroll
      for (int e = 0; e < 32; e += 2)
        *reinterpret_cast<std::uint32_t *>(
            &s.aqk[at][wgmma::k_major_at<C>(wgmma::d_row(e), wgmma::d_col(e))]) = aqk[e / 2];
      if (Aqk) {
        In *aqk_rows = Aqk + at_score(rows.bos, hd, 0, d); // row i at i * H * C
        const int last = min(rows.n, aqk_to);
#pragma unroll
        for (int e = 0; e < 32; e += 2) {
          const int i = wgmma::d_row(e);
          if (i >= aqk_from && i < last)
            *reinterpret_cast<std::uint32_t *>(aqk_rows + i * d.H * C + wgmma::d_col(e)) =
                aqk[e / 2];
        }
      }
      wgmma::fence_shared_for_async();
      tma::arrive(&s.ready[at]); // the state's warpgroup may take chunk c
      mark(c, WY_ARRIVED, tid == 0);
      // chunk c + 2's copies into chunk c - 1's places, once the state's warpgroup is done there
      // (while it works on chunk c - 1, this warpgroup made chunk c's scores)
      if (c + 2 < chunks) {
        if (c >= 1)
          tma::wait_barrier(&s.empty[(c + 2) % PLACES], ((c - 1) / PLACES) & 1);
        copy_chunk(c + 2);
      }
      mma::commit_copies();
      mark(c, WY_STEP_END, tid == 0);
    }
    mma::wait_copies();
    return;
  }

  // -- the state's warpgroup: h^T, keys [64 m, 64 m + 64) in state[m]
  float state[M][32];
#pragma unroll
  for (int m = 0; m < M; ++m)
#pragma unroll
    for (int e = 0; e < 32; ++e)
      state[m][e] =
          p.s0 ? p.s0[at_state(n_seq, hd, 64 * m + wgmma::d_col(e), v0 + wgmma::d_row(e), d)]
               : 0.0f;
  In *o = static_cast<In *>(p.o);
  for (int c = 0; c < chunks; ++c) {
    const int at = c % PLACES;
    const std::uint64_t k_at = wgmma::moved(k_desc, at * KB), q_at = wgmma::moved(q_desc, at * KB),
                        kt_at = wgmma::moved(kt_desc, at * KB);
    const ChunkRows rows = rows_of(c);
    tma::wait_barrier(&s.full[at], (c / PLACES) & 1);
    tma::wait_barrier(&s.ready[at], (c / PLACES) & 1);
    mark(c, STATE_WY_DONE, tid == 0);
    // h^T in the input type, the left factor of h^T k^T and h^T q^T
    std::uint32_t hf[KS][4];
#pragma unroll
    for (int ks = 0; ks < KS; ++ks)
      wgmma::a_from_d<In>(hf[ks], state[ks / 4], ks % 4);
    float kh[32], oacc[32];
    wgmma::fence();
    if constexpr (!PLAIN) {
#pragma unroll
      for (int ks = 0; ks < KS; ++ks) // (k h)^T = h^T k^T
        wgmma::m64n64k16_rs<In, false>(
            kh, hf[ks], wgmma::moved(k_at, wgmma::k_major_swizzled_offset<C>(16 * ks)), ks > 0);
      wgmma::commit();
    }
#pragma unroll
    for (int ks = 0; ks < KS; ++ks) // h^T q^T
      wgmma::m64n64k16_rs<In, false>(
          oacc, hf[ks], wgmma::moved(q_at, wgmma::k_major_swizzled_offset<C>(16 * ks)), ks > 0);
    wgmma::commit();
    std::uint32_t vt[16];
    load_v_transposed(vt, s.v[at]);
    // this thread's columns (the chunk's rows i): beta_i, e^{g_cum_i}, e^{gl - g_cum_i}
    // (entry e's column is that of entry 4 (e / 4) + e % 2)
    float beta[8][2], up[8][2], to_end[8][2];
#pragma unroll
    for (int j = 0; j < 8; ++j)
#pragma unroll
      for (int u = 0; u < 2; ++u) {
        const int i = wgmma::d_col(4 * j + u);
        beta[j][u] = PLAIN ? 0.0f : s.beta[at][i];
        up[j][u] = s.up[at][i];
        to_end[j][u] = s.to_end[at][i];
      }
    std::uint32_t nf[4][4], ef[4][4]; // v_new^T, v_new^T Diag(e^{gl - g_cum}) in the input type
#ifdef RULEPROOF_PLANTED_BUG
    std::uint32_t xf[4][4] = {};
#else
    std::uint32_t xf[4][4];
#endif
    if constexpr (PLAIN) { // v_new = v: its pieces are v's own
      wgmma::wait<0>();    // h^T q^T
      mark(c, STATE_V_NEW, tid == 0);
#pragma unroll
      for (int e = 0; e < 32; e += 2) {
        const int j = e / 4;
        float v_lo, v_hi;
        unpack(vt[e / 2], In{}, v_lo, v_hi);
        nf[e / 8][(e % 8) / 2] = vt[e / 2];
        ef[e / 8][(e % 8) / 2] = mma::pack_rounded<In>(to_end[j][0] * v_lo, to_end[j][1] * v_hi);
      }
    } else {
      wgmma::wait<1>(); // (k h)^T is in
      wgmma::fence_operand(kh);
      mark(c, STATE_WH, tid == 0);
#pragma unroll
      for (int e = 0; e < 32; e += 2) { // x^T = (v^T - (k h)^T Diag(e^{g_cum})) Diag(beta), rounded
        float v_lo, v_hi;
        unpack(vt[e / 2], In{}, v_lo, v_hi);
        const int j = e / 4;
        const float x0 = beta[j][0] * (v_lo - up[j][0] * kh[e]);
        const float x1 = beta[j][1] * (v_hi - up[j][1] * kh[e + 1]);
        xf[e / 8][(e % 8) / 2] = mma::pack_rounded<In>(x0, x1);
      }
      float vn[32]; // v_new^T = x^T A^T
      wgmma::fence();
#pragma unroll
      for (int ks = 0; ks < 4; ++ks)
        wgmma::m64n64k16_rs<In, false>(
            vn, xf[ks], wgmma::moved(a_desc, at * AB + wgmma::k_major_swizzled_offset<C>(16 * ks)),
            ks > 0);
      wgmma::commit();
      wgmma::wait<0>(); // h^T q^T and v_new^T
      wgmma::fence_operand(vn);
      mark(c, STATE_V_NEW, tid == 0);
#pragma unroll
      for (int ks = 0; ks < 4; ++ks)
        wgmma::fence_operand(xf[ks]);
#pragma unroll
      for (int e = 0; e < 32; e += 2) {
        const int j = e / 4;
        nf[e / 8][(e % 8) / 2] = mma::pack_rounded<In>(vn[e], vn[e + 1]);
        ef[e / 8][(e % 8) / 2] =
            mma::pack_rounded<In>(to_end[j][0] * vn[e], to_end[j][1] * vn[e + 1]);
      }
    }
    wgmma::fence_operand(oacc);
#pragma unroll
    for (int ks = 0; ks < KS; ++ks)
      wgmma::fence_operand(hf[ks]);
#pragma unroll
    for (int e = 0; e < 32; e += 2) { // o's state term scaled by scale e^{g_cum}
      oacc[e] *= d.scale * up[e / 4][0];
      oacc[e + 1] *= d.scale * up[e / 4][1];
    }
    const float decay = s.decay[at];
#pragma unroll
    for (int m = 0; m < M; ++m)
#pragma unroll
      for (int e = 0; e < 32; ++e)
        state[m][e] *= decay;
    wgmma::fence();
#pragma unroll
    for (int ks = 0; ks < 4; ++ks) // o^T += v_new^T Aqk^T
#ifdef RULEPROOF_PLANTED_BUG // gpu_check_planted only: a deliberate bug, the output takes x for
                             // v_new in its scores' term (the plain form's bug is in its scores)
      wgmma::m64n64k16_rs<In, false>(
          oacc, PLAIN ? nf[ks] : xf[ks],
          wgmma::moved(aqk_desc, at * AB + wgmma::k_major_offset<C>(16 * ks)), true);
#else
      wgmma::m64n64k16_rs<In, false>(
          oacc, nf[ks], wgmma::moved(aqk_desc, at * AB + wgmma::k_major_offset<C>(16 * ks)), true);
#endif
    wgmma::commit();
#pragma unroll
    for (int m = 0; m < M; ++m) // h'^T = e^{gl} h^T + v_end^T k
#pragma unroll
      for (int ks = 0; ks < 4; ++ks)
        wgmma::m64n64k16_rs<In, true>(
            state[m], ef[ks],
            wgmma::moved(kt_at, 64 * C * m * 2 + wgmma::mn_major_swizzled_offset(16 * ks)), true);
    wgmma::commit();
    wgmma::wait<1>(); // the output is in
    wgmma::fence_operand(oacc);
    // o, at row i = d_col(e) of the chunk and value column v0 + d_row(e). A whole chunk's goes
    // through its parity's tile: each warp's 16 value columns stored transposed (stmatrix),
    // eight rows of o at a time, and the tile copied out by one instruction (o_map); the copy of
    // chunk c - 1 is done reading its tile before this chunk's barrier, so that chunk c + 1 may
    // write there. A chunk of fewer rows, its sequence's last (and the block's), is stored from
    // the accumulators, row by row, none past the sequence's end.
    if (rows.n == C) {
      In *tile = s.o[c % 2];
      static_assert(C == 64 && HELD_BV == 64, "o's tile: one panel of 64 rows by 64 columns");
      warpgroup::store_transposed_swizzled(tile, oacc, tid); // o = (o^T)^T
      wgmma::fence_shared_for_async();
      if (tid == 0)
        tma::wait_stores_read<0>();
      mma::barrier_sync(STATE_BARRIER, WG);
      if (tid == 0) {
        tma::store_tile_swizzled(o_map, hd * V + v0, rows.bos, tile);
        tma::commit_stores();
      }
    } else {
      In *o_rows = o + at_v(rows.bos, hd, v0, d); // row i at i * H * V
      const int o_stride = d.H * d.V;
#pragma unroll
      for (int e = 0; e < 32; ++e)
        if (wgmma::d_col(e) < rows.n)
          o_rows[wgmma::d_col(e) * o_stride + wgmma::d_row(e)] = tc::to<In>(oacc[e]);
    }
    mark(c, OUTPUT_STORED, tid == 0);
    wgmma::wait<0>();
    mark(c, STATE_UPDATE, tid == 0);
#pragma unroll
    for (int m = 0; m < M; ++m)
      wgmma::fence_operand(state[m]);
#pragma unroll
    for (int ks = 0; ks < 4; ++ks) {
      wgmma::fence_operand(nf[ks]);
      wgmma::fence_operand(ef[ks]);
    }
    tma::arrive(&s.empty[at]); // chunk c's places may take chunk c + 3's copies
  }
  if (tid == 0)
    tma::wait_stores<0>(); // the output's last copies out of shared memory
  if (p.s_end)
#pragma unroll
    for (int m = 0; m < M; ++m)
#pragma unroll
      for (int e = 0; e < 32; ++e)
        p.s_end[at_state(n_seq, hd, 64 * m + wgmma::d_col(e), v0 + wgmma::d_row(e), d)] =
            state[m][e];
}

template <class In, int K, int V, bool PLAIN>
void launch_held(const DeltaFusedPass &p, const DeviceChunkTable &t, const ChunkDims &d) {
  const int bytes = static_cast<int>(sizeof(HeldShared<In, K>)) + SWIZZLE_ALIGN;
  auto *kernel = chunk_delta_held_tc_kernel<In, K, V, PLAIN>;
  allow_shared_memory(kernel, bytes, "chunk_delta_held_tc_kernel");
  // q, k [B * T, H * K], v [B * T, H * V] and A [B * T, H * C], by 64 rows (none where every
  // sequence is empty: a tensor map has no dimension of size 0, and no block copies anything)
  CUtensorMap q_map{}, k_map{}, v_map{}, a_map{}, o_map{};
  if (p.rows > 0) {
    const long HK = static_cast<long>(d.H) * K, HV = static_cast<long>(d.H) * V,
               HC = static_cast<long>(d.H) * C;
    q_map = tma::encode_swizzled_tiles_map(p.q, p.rows, HK, HK, C, K, d.fp16);
    k_map = tma::encode_swizzled_tiles_map(p.k, p.rows, HK, HK, C, K, d.fp16);
    v_map = tma::encode_swizzled_tiles_map(p.v, p.rows, HV, HV, C, HELD_BV, d.fp16);
    if (!PLAIN)
      a_map = tma::encode_swizzled_tiles_map(p.A, p.rows, HC, HC, C, C, d.fp16);
    o_map = tma::encode_swizzled_tiles_map(p.o, p.rows, HV, HV, C, HELD_BV, d.fp16);
  }
  kernel<<<dim3(t.N, d.H, V / HELD_BV), HELD_THREADS, bytes>>>(p, t, d, q_map, k_map, v_map, a_map,
                                                               o_map);
}

/// The kernel of form PLAIN for the call's input type and sizes; `name` for its error.
template <bool PLAIN>
void launch_held_form(const DeltaFusedPass &p, const DeviceChunkTable &t, const ChunkDims &d,
                      const char *name) {
  if (t.N == 0)
    return;
  with_sizes(d, [&](auto y, auto ks, auto vs) {
    using In = decltype(y);
    constexpr int K = decltype(ks)::value, V = decltype(vs)::value;
    launch_held<In, K, V, PLAIN>(p, t, d);
  });
  check(name);
}

} // namespace

void launch_chunk_delta_held_tc(const DeltaFusedPass &p, const DeviceChunkTable &t,
                                const ChunkDims &d) {
  launch_held_form<false>(p, t, d, "chunk_delta_held_tc_kernel");
}

void launch_chunk_gla_held_tc(const DeltaFusedPass &p, const DeviceChunkTable &t,
                              const ChunkDims &d) {
  launch_held_form<true>(p, t, d, "chunk_delta_held_tc_kernel (plain)");
}

} // namespace ruleproof::gpu::detail
