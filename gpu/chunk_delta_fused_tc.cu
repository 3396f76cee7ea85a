// ruleproof: gated_delta_rule's forward in one kernel on warpgroup MMA (sm_90a):
// chunk_delta_fused_tc_kernel. The WY representation, the state, v_new and the output of each
// chunk, the chunks of a sequence in order, with nothing between them written to memory. The
// CPU reference, one grep away: reference/kda/chunk.hpp (chunk_wy_fwd: chunk_scaled_dot_kkt,
// solve_tril, recompute_w_u; chunk_delta_fwd_h; chunk_fwd_o), seed 003's forward steps 1-5, with
// the gate repeated over the keys (reference/kda/variant.hpp). It computes what the two kernels of
// gpu/chunk_delta_tc.cu (the lean WY kernel, then chunk_gla_state_tc with w and row factors)
// compute, rounding the same intermediates to the input type at the same places: Aqk, A, beta k
// e^{g_cum}, beta v, w, u, the state's copy at a chunk's start, v_new and v_end; the products' sums
// are wgmma's fp32 sums in place of mma.sync's. Two forms (A_GIVEN): given A of every chunk
// (launch_chunk_delta_a_tc's, gpu/chunk_delta_tc.cu, run first: RULEPROOF_DELTA_FORWARD=fused_a,
// the default on compute capability 9.0 until the held kernel, gpu/chunk_delta_held_tc.cu, took
// its place; the states form below is still the backward's under both), the WY warpgroups make no
// A0 and no solve, and A comes in with the keys; without it (RULEPROOF_DELTA_FORWARD=fused), they
// make A0 and A themselves. A third form (STATES, launch_chunk_delta_fused_states_tc), given A, is
// the backward's recompute under the fused forms: no output, and each role stores what the backward
// reads from the tiles it made itself (the state warpgroup h at each chunk's start and v_new, the
// WY warpgroups w, the row factors and e^{gl}), as chunk_delta_wy_from_a_tc then
// chunk_gla_state_tc would; for a backward that solves again, the output warpgroup stores Aqk as
// the forward does (the same wgmma sums, so that a backward from the forward's saved Aqk gives the
// same bits). A fourth form (PLAIN, launch_chunk_gla_fused_tc) is simple_gla's forward
// (reference/gla/chunk.hpp, chunk_forward_pass, with the gate repeated over the keys:
// reference/simple_gla/simple_gla.hpp): no WY representation and v_new = v, so that the second WY
// warpgroup makes each chunk's gates and, a step ahead, v_end = v . e^{gl - g_cum} (in w's place
// of index c % 2), the first only copies the keys, and the state's step is h's update and copy
// alone; it rounds what launch_chunk_gla_scores_tc then chunk_gla_state_tc round (the scores,
// v_end, the state's copy), behind RULEPROOF_GLA_FORWARD=fused. On an H200 at B 4, T 4096, H 16,
// K = V = 128, bf16: 0.425-0.426 ms given A, 0.513-0.519 without, the two kernels 0.517-0.518
// (reports/gpu/tensor_core.md, "The forward from A").
//
// Per chunk of n <= 64 rows (g_cum its local cumulative gate, gl = g_cum of its last row):
//   Aqk_ij = scale (q k^T)_ij e^{g_cum_i - g_cum_j} (j <= i)
//   A0_ij  = beta_i (k k^T)_ij e^{g_cum_i - g_cum_j} (j < i)     A = (I + A0)^-1
//   w = A (beta k . e^{g_cum})    u = A (beta v)    v_new = u - w h
//   o = scale e^{g_cum} (q h) + Aqk v_new    h' = e^{gl} h + k^T (v_new . e^{gl - g_cum})
//
// A block takes one sequence, one head and 64 of the values' columns (grid N x H x V / 64), four
// warpgroups in three roles:
//   state (warpgroup 0): h (K x 64, fp32) in wgmma accumulators; at chunk c, v_new = u - w h, then
//     h's decay and update, then h's copy in the input type for chunk c + 1;
//   output (warpgroup 1): chunk c's q h and q k^T (Aqk, stored where p.Aqk is given), then, once
//     v_new is in, Aqk v_new, and the output's store (STATES: q k^T and Aqk's store alone, where
//     p.Aqk is given, else none of these: it only meets the others at barrier 0);
//   WY (warpgroups 2 and 3): while the others work on chunk c, chunk c + 1's gates, A0, the solve
//     (fp32, unit_lower_inverse by these two alone), A (or, given A, none of these three), w and
//     u; and the copies of the tiles that come next (cp.async): k, the gates (and, given A, A) of
//     chunk c + 2 (the first); q of chunk c + 1 once its gates are handed over, v of chunk c + 2
//     once u's product is done with v of chunk c + 1 (the second).
// Each role runs its own loop over the chunks, so that the registers of one (the state's 64
// accumulators) are not held through another's code, and the roles meet once a chunk at barrier 0
// from their own instructions (barrier.sync without .aligned); inside a chunk, named barriers: the
// output warpgroup waits for v_new (V_NEW_BARRIER), and the state warpgroup for the output's reads
// of h before it writes h's next copy (H_FREE_BARRIER). Between the state and the WY warpgroups,
// two mbarriers a place of index c % 2: the state warpgroup waits for the WY warpgroups' w and u of
// its chunk (wy_done: they arrive a step before), and before the WY warpgroups write chunk c + 2's
// q, w, u and gates into the places of chunk c, they wait for the state's and the output's reads of
// them (places_read). Barrier 0 alone orders both; racecheck reported, in some runs and not others,
// the WY warpgroups' writes of u as racing with the state's reads of u, with barrier 0 alone and
// with a named barrier (bar.arrive, then bar.sync) in wy_done's place: in 4 of 13 runs with the
// named barrier, in none of 16 with wy_done (Fisher's exact test: p = 0.030). Under
// RULEPROOF_DELTA_FORWARD=fused, while the second WY warpgroup handed the gates over by bar.arrive
// (GATES_BARRIER), racecheck reported unit_lower_inverse's stores of its diagonal blocks as racing
// with the next pass's loads, across the WY warpgroups' barrier; with both waiting there (bar.sync)
// it reports none, and the same solve by two warpgroups at such a barrier in a test kernel of its
// own draws none (gpu/tests/lower_inverse_tests.cpp; reports/gpu/tensor_core.md, "The fused kernel
// under racecheck" and "The gates' hand-off"). Every shared tile is held in wgmma's core-matrix
// layout without swizzle (gpu/detail/wgmma.cuh): a tile of R rows stored by rows is at
// k_major_at<R>(row, col), which serves as a K-major operand read along its columns and as an
// MN-major one read along its rows (k^T in h's update, h and v_new as right factors). 229 KB of
// shared memory at K = 128, one block an SM.
//
// The keys' and A's tiles come by the Tensor Memory Accelerator (DeltaFusedPass::tma, the default;
// RULEPROOF_FUSED_COPIES=threads for cp.async): each as K / 8 (or 8) boxes of 8 columns by 64 rows
// (gpu/detail/tma.cuh), the first lane of each of the first WY warpgroup's warps issuing a quarter
// of them (RULEPROOF_FUSED_TMA=thread: its first thread every box, with which the WY warpgroups
// started each chunk 780 to 1,340 cycles later), their bytes counted on the mbarrier of that place
// of k, and the warpgroup waits there where it waited for its cp.async (keys_in), zeroing the rows
// past a sequence's end, which the copy brings from the next sequence (copy_tile zeroes them
// itself). Issuing those copies was the longest phase of the WY warpgroups' step
// (reports/gpu/tensor_core.md).
#include <cstdint>

#include "detail/chunk_device.cuh" // at_v, at_state, at_score, sequence_chunk_rows, check,
                                   // allow_shared_memory, with_sizes, C
#include "detail/delta_launch.hpp"
#include "detail/gla_tc.cuh" // to, val, fast_exp, LowerInverse, unit_lower_inverse, SUB
#include "detail/mma.cuh"    // copy_async, commit_copies, pack_rounded, barrier_sync
#include "detail/tma.cuh"
#include "detail/warpgroup_tc.cuh" // tile_piece, zero_rows_past, issue_product, AccGates,
                                   // chunk_gate_scan
#include "detail/wgmma.cuh"

namespace ruleproof::gpu::detail {

namespace {

using namespace tc;
using warpgroup::AccGates;
using warpgroup::chunk_gate_scan;
using warpgroup::issue_product;
using warpgroup::tile_piece;
using warpgroup::TilePiece;
using warpgroup::zero_rows_past;

constexpr int FUSED_BV = 64;                          // the values' columns of a block
constexpr int WARPGROUP = 128;                        // threads of a warpgroup
constexpr int STATE_WG = 0, OUTPUT_WG = 1, WY_WG = 2; // the WY's: warpgroups 2 and 3
constexpr int WY_THREADS = 2 * WARPGROUP, FUSED_THREADS = 2 * WARPGROUP + WY_THREADS;
constexpr int STATE_BARRIER = 1, WY_BARRIER = 2, OUTPUT_BARRIER = 3; // each role's own
constexpr int V_NEW_BARRIER = 4, H_FREE_BARRIER = 5; // state and output warpgroups, 256 threads
// the WY warpgroups meet there once a chunk's gates are in, before the first makes A0 (both by
// bar.sync: with the second's bar.arrive there, racecheck reported 55 to 73 races a run in the
// solve, and none with bar.sync, which was also faster)
constexpr int GATES_BARRIER = 7;

static_assert(C * (C / 8) % WY_THREADS == 0 && C * (64 / 8) % WY_THREADS == 0,
              "the WY warpgroups' conversions: whole 16-byte pieces a thread, for K of 64 and 128");

/// Element (r, c) of a tile of R rows stored by rows, in wgmma's core-matrix layout.
template <int R> __device__ inline int tile_at(int r, int c) { return wgmma::k_major_at<R>(r, c); }

template <class T, int K> struct alignas(16) FusedShared {
  static constexpr int BV = FUSED_BV;
  T k[3][C * K];   // chunks c (h's update, Aqk), c + 1 (its WY) and c + 2 (on its way)
  T q[2][C * K];   // chunks c and c + 1
  T v[C * BV];     // chunk c + 1's values, then beta v: u's right factor
  T w[2][C * K];   // chunks c and c + 1
  T u[2][C * BV];  // chunks c and c + 1
  T h[K * BV];     // the state at chunk c's start, in the input type
  T v_new[C * BV]; // u - w h, the output's right factor
  T v_end[C * BV]; // v_new . e^{gl - g_cum}, h's update's right factor
  T aqk[C * C];    // the output warpgroup's scores
  T a16[C * C];    // A in the input type
  union {          // the WY warpgroups': A0 until the solve ends, then beta k e^{g_cum}
    float a0[C][C + 1];
    T bk[C * K];
  } f;
  union {
    LowerInverse solve; // the solve's places
    T a16_odd[C * C];   // or, given A, the odd chunks' A in the input type (a16 the even ones')
  };
  float g_raw[3][C], beta[3][C];                               // as k: chunks c, c + 1, c + 2
  float g_cum[2][C], row_up[2][C], row_to_end[2][C], decay[2]; // chunks c and c + 1
  std::uint64_t keys_arrived[3]; // with DeltaFusedPass::tma: k's (and A's) copy of each k place
  // the state's and the output's reads of chunk c's places of index c % 2 (q, w, u and the gates)
  // are done: the WY warpgroups may write chunk c + 2's there
  std::uint64_t places_read[2];
  // the WY warpgroups' w and u of chunk c are in the places of index c % 2 (they arrive in step
  // c - 1): the state warpgroup may read them (in step c)
  std::uint64_t wy_done[2];
};
// the Tensor Memory Accelerator's destinations: 128-byte aligned
using FusedBf16K128 = FusedShared<__nv_bfloat16, 128>;
using FusedBf16K64 = FusedShared<__nv_bfloat16, 64>;
static_assert(offsetof(FusedBf16K128, k) % 128 == 0 && offsetof(FusedBf16K128, a16) % 128 == 0 &&
              offsetof(FusedBf16K128, a16_odd) % 128 == 0 &&
              offsetof(FusedBf16K64, a16) % 128 == 0 && offsetof(FusedBf16K64, a16_odd) % 128 == 0);

/// Starts copying rows [0, valid) of a tile of ROWS x COLS 16-bit values (row r from src + r *
/// stride) into dst's core-matrix layout, rows past `valid` zero; by one warpgroup (tid its
/// place), a thread 16 bytes at a time (tile_piece's places).
template <int ROWS, int COLS, class T>
__device__ void copy_tile(T *dst, const T *src, long stride, int valid, int tid) {
  static_assert(ROWS % 4 == 0 && COLS % 64 == 0, "whole groups of 4 rows by 8 pieces");
#pragma unroll 4
  for (int e = tid; e < ROWS * (COLS / 8); e += WARPGROUP) {
    const TilePiece x = tile_piece<ROWS>(e);
    mma::copy_async<16>(dst + tile_at<ROWS>(x.r, x.c0),
                        src + (x.r < valid ? x.r : 0) * stride + x.c0, x.r >= valid);
  }
}

/// Stores rows [from, valid) of a tile of ROWS x COLS 16-bit values held in src's core-matrix
/// layout to dst (row r at dst + r * stride): by one warpgroup (tid its place), a thread 16 bytes
/// at a time (tile_piece's places).
template <int ROWS, int COLS, class T>
__device__ void store_tile(T *dst, long stride, const T *src, int valid, int tid, int from = 0) {
  static_assert(ROWS % 4 == 0 && COLS % 64 == 0, "whole groups of 4 rows by 8 pieces");
#pragma unroll 1 // (one piece in registers at a time: the state warpgroup holds h and w h)
  for (int e = tid; e < ROWS * (COLS / 8); e += WARPGROUP) {
    const TilePiece x = tile_piece<ROWS>(e);
    if (x.r >= from && x.r < valid)
      *reinterpret_cast<uint4 *>(dst + x.r * stride + x.c0) =
          *reinterpret_cast<const uint4 *>(src + tile_at<ROWS>(x.r, x.c0));
  }
}

template <class In, int K, int V, bool A_GIVEN, bool STATES, bool PLAIN>
__global__ void __launch_bounds__(FUSED_THREADS, 1)
    chunk_delta_fused_tc_kernel(DeltaFusedPass p, DeviceChunkTable t, ChunkDims d,
                                const __grid_constant__ CUtensorMap keys_map,
                                const __grid_constant__ CUtensorMap a_map) {
  static_assert(!PLAIN || (!A_GIVEN && !STATES), "simple_gla's form: its forward alone");
  using S = FusedShared<In, K>;
  constexpr int BV = FUSED_BV;
  extern __shared__ __align__(128) unsigned char shared_bytes[];
  S &s = *reinterpret_cast<S *>(shared_bytes);
  const int n_seq = blockIdx.x, hd = blockIdx.y, v0 = blockIdx.z * BV;
  const int wg = min(int(threadIdx.x) / WARPGROUP, WY_WG), tid = threadIdx.x % WARPGROUP;
  const int wy_tid = threadIdx.x - WY_WG * WARPGROUP; // the WY warpgroups' place (0..255)
  const bool wy_first = wy_tid < WARPGROUP;           // the first WY warpgroup
  const int first = t.seq_first_chunk[n_seq], chunks = t.seq_first_chunk[n_seq + 1] - first;
  const int seq_bos = t.seq_bos[n_seq], seq_eos = t.seq_eos[n_seq];
  const auto rows_of = [&](int c) { return sequence_chunk_rows(seq_bos, seq_eos, c); };
  // the timeline (a diagnostic, DeltaFusedPass::timeline): block (0, 0, 0)'s SM cycles since its
  // start, each event by one thread of the warpgroup it names
  const bool timed = p.timeline && blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0;
  const long long started = clock64();
  const auto mark = [&](int c, FusedEvent event, bool by_this_thread) {
    if (timed && by_this_thread && c < fused_timeline_chunks)
      p.timeline[c * fused_timeline_events + event] = static_cast<float>(clock64() - started);
  };
  const In *q = static_cast<const In *>(p.q), *k = static_cast<const In *>(p.k),
           *v = static_cast<const In *>(p.v);
  const long keys = static_cast<long>(d.H) * K, values = static_cast<long>(d.H) * V;
  const auto row_at = [&](ChunkRows rows) { return static_cast<long>(rows.bos) * d.H + hd; };
  // chunk c's A in the input type: given, even and odd chunks' in turn; else made in one place
  const auto a16_of = [&](int c) { return A_GIVEN && c % 2 ? s.a16_odd : s.a16; };
  // chunk c's v_end, h's update's right factor: made by the state warpgroup in its step, or, in
  // the plain form, by the second WY warpgroup a step before, in w's place of index c % 2
  const auto v_end_of = [&](int c) { return PLAIN ? s.w[c % 2] : s.v_end; };

  // Aqk, where p.Aqk is given, is stored by the output warpgroups of the blocks of a sequence and
  // head, each its share of the rows (the same sums in each block); in the states form, by an
  // output warpgroup that otherwise has no step
  const bool scores_out = STATES && p.Aqk;
  const int aqk_from = C * int(blockIdx.z) / int(gridDim.z),
            aqk_to = C * (int(blockIdx.z) + 1) / int(gridDim.z); // this block's rows of Aqk

  // -- the WY warpgroups' copies (each by one of them): chunk c's keys and gates, its values, and
  //    its queries
  const auto copy_keys = [&](int c) {
    const ChunkRows rows = rows_of(c);
    if (p.tma) { // by the first lane of each of the warpgroup's warps, a share of the boxes each
                 // (or its first thread alone, DeltaFusedPass::tma_thread): the barrier's phase
                 // cannot end before the first's arrival, which expects every box's bytes; rows
                 // past n zeroed once in (keys_in)
      const int issuers = p.tma_thread ? 1 : WARPGROUP / 32, part = tid / 32;
      if (tid % 32 == 0 && part < issuers) {
        wgmma::fence_shared_for_async(); // the places' earlier reads before the copy's writes
        if (part == 0)
          tma::arrive_expecting(&s.keys_arrived[c % 3], (C * K + (A_GIVEN ? C * C : 0)) * 2);
        tma::copy_rows_k_major<K>(s.k[c % 3], keys_map, hd * K, rows.bos, &s.keys_arrived[c % 3],
                                  part, issuers);
        if constexpr (A_GIVEN)
          tma::copy_rows_k_major<C>(a16_of(c), a_map, hd * C, rows.bos, &s.keys_arrived[c % 3],
                                    part, issuers);
      }
    } else {
      copy_tile<C, K>(s.k[c % 3], k + row_at(rows) * K, keys, rows.n, tid);
      if constexpr (A_GIVEN)
        copy_tile<C, C>(a16_of(c), static_cast<const In *>(p.A) + row_at(rows) * C,
                        static_cast<long>(d.H) * C, rows.n, tid);
    }
    if (tid < C) {
      const long at = row_at(rows) + static_cast<long>(tid < rows.n ? tid : 0) * d.H;
      mma::copy_async<4>(&s.g_raw[c % 3][tid], p.g + at, tid >= rows.n);
      if constexpr (!PLAIN)
        mma::copy_async<4>(&s.beta[c % 3][tid], p.beta + at, tid >= rows.n);
    }
  };
  // with tma, by the first WY warpgroup once its copies are waited for: chunk c's keys (and A)
  // in, the rows past n (the next sequence's, where a sequence ends inside the array) zeroed as
  // copy_tile zeroes them
  const auto keys_in = [&](int c) {
    if (p.tma) {
      tma::wait_barrier(&s.keys_arrived[c % 3], (c / 3) % 2);
      const int n = rows_of(c).n;
      zero_rows_past<C, K>(s.k[c % 3], n, tid);
      if constexpr (A_GIVEN)
        zero_rows_past<C, C>(a16_of(c), n, tid);
    }
  };
  const auto copy_values = [&](int c) {
    const ChunkRows rows = rows_of(c);
    copy_tile<C, BV>(s.v, v + row_at(rows) * V + v0, values, rows.n, tid);
  };
  const auto copy_queries = [&](int c) {
    const ChunkRows rows = rows_of(c);
    copy_tile<C, K>(s.q[c % 2], q + row_at(rows) * K, keys, rows.n, tid);
  };

  // chunk c's g_cum, each row's e^{g_cum} and e^{gl - g_cum}, and e^{gl}, from its gates in the
  // place of index c % 3 (by the first warp of the second WY warpgroup)
  const auto chunk_gates = [&](int c) {
    const ChunkRows rows = rows_of(c);
    const int n = rows.n, s3 = c % 3, s2 = c % 2;
    if (tid < 32) { // g_cum of rows 2 tid and 2 tid + 1 (chunk_gate_scan), their factors, e^{gl}
      const float gl =
          chunk_gate_scan(s.g_raw[s3], tid, [&](int i, float g, float up, float to_end) {
            s.g_cum[s2][i] = g;
            s.row_up[s2][i] = up;
            s.row_to_end[s2][i] = to_end;
            if (STATES && v0 == 0 && i < n) { // the backward's row factors
              const long at = row_at(rows) + static_cast<long>(i) * d.H;
              p.row_up[at] = up;
              p.row_to_end[at] = to_end;
            }
          });
      if (tid == 0)
        s.decay[s2] = expf(gl);
      if (STATES && v0 == 0 && tid == 0)
        p.decay[static_cast<long>(first + c) * d.H + hd] = s.decay[s2];
    }
  };

  // -- the plain form's step for chunk c (the second WY warpgroup; no WY representation): the
  //    gates, the queries' copy started, and once its copy of v is in, v_new = v (u's place) and
  //    v_end = v . e^{gl - g_cum}, each thread the pieces of v it copied itself
  const auto plain_step = [&](int c) {
    const int s2 = c % 2;
    chunk_gates(c);
    copy_queries(c); // for the output warpgroup's step on this chunk
    mma::commit_copies();
    mma::wait_copies_but_last(); // the values' copy (the queries' may be on its way)
    mma::barrier_sync(GATES_BARRIER, WARPGROUP); // every row's factors are in
    In *v_end = v_end_of(c);
    for (int e = tid; e < C * (BV / 8); e += WARPGROUP) {
      const TilePiece piece = tile_piece<C>(e);
      const int i = piece.r, at = tile_at<C>(i, piece.c0);
      const float f = s.row_to_end[s2][i];
      alignas(16) In x[8], y[8];
      *reinterpret_cast<uint4 *>(x) = *reinterpret_cast<const uint4 *>(&s.v[at]);
#pragma unroll
      for (int u = 0; u < 8; ++u)
        y[u] = to<In>(f * val(x[u]));
      *reinterpret_cast<uint4 *>(&s.u[s2][at]) = *reinterpret_cast<const uint4 *>(x);
      *reinterpret_cast<uint4 *>(&v_end[at]) = *reinterpret_cast<const uint4 *>(y);
    }
  };

  // -- chunk c's WY representation (the two WY warpgroups, meeting at WY_BARRIER): the first
  //    makes k k^T while the second makes the gates (handed over at GATES_BARRIER) and, once its
  //    copy of v is in, beta v (and starts the copy of the chunk's queries); the first makes A0
  //    from k k^T's accumulators; both solve, and make A and beta k e^{g_cum}; then the first makes
  //    w, the second u
  const auto wy = [&](int c) {
    const ChunkRows rows = rows_of(c);
    const int n = rows.n, s3 = c % 3, s2 = c % 2;
    const In *kt = s.k[s3];
    const auto sync = [] { mma::barrier_sync(WY_BARRIER, WY_THREADS); };
    if (c >= 2) // chunk c - 2's readers are done with the places of index c % 2
      tma::wait_barrier(&s.places_read[s2], ((c - 2) / 2) & 1);
    mark(c, WY_START, wy_tid == 0);
    if constexpr (PLAIN) { // the first WY warpgroup has nothing to make
      if (!wy_first)
        plain_step(c);
      mark(c, WY_U, tid == 0 && !wy_first);
      return;
    }
    if (A_GIVEN && wy_first) {
      // A came with the keys: nothing to make before the gates
    } else if (wy_first) { // A0 = Diag(beta) (k k^T) . D from k k^T's accumulators, one exp an
                           // entry
      float kk[32] = {};
      wgmma::fence();
      issue_product<In, false>(
          kk, K, [&](int k0) { return wgmma::k_major<C>(kt, k0); },
          [&](int k0) { return wgmma::k_major<C>(kt, k0); }, false);
      wgmma::commit();
      wgmma::wait<0>();
      mma::barrier_sync(GATES_BARRIER, WY_THREADS); // the gates are in
      const AccGates gates(s.g_cum[s2]);
      const float beta_row[2] = {s.beta[s3][wgmma::d_row(0)], s.beta[s3][wgmma::d_row(2)]};
#pragma unroll
      for (int e = 0; e < 32; ++e) {
        const int i = wgmma::d_row(e), j = wgmma::d_col(e);
        s.f.a0[i][j] = j < i ? beta_row[(e % 4) / 2] * kk[e] * gates.decay(e) : 0.0f;
      }
    } else {
      chunk_gates(c);
      if constexpr (!A_GIVEN)
        mma::barrier_sync(GATES_BARRIER, WY_THREADS); // the first may make A0
      if (!STATES || scores_out)
        copy_queries(c); // for the output warpgroup's step on this chunk
      mma::commit_copies();
      // beta v, u's right factor, in place: each thread the 16-byte pieces it copied itself
      // (copy_tile's places), once its copy is in (the queries', issued after it, may still be on
      // their way)
      mma::wait_copies_but_last();
      for (int e = tid; e < C * (BV / 8); e += WARPGROUP) {
        const TilePiece piece = tile_piece<C>(e);
        const int i = piece.r, at = tile_at<C>(i, piece.c0);
        alignas(16) In x[8];
        *reinterpret_cast<uint4 *>(x) = *reinterpret_cast<const uint4 *>(&s.v[at]);
#pragma unroll
        for (int u = 0; u < 8; ++u)
          x[u] = to<In>(s.beta[s3][i] * val(x[u]));
        *reinterpret_cast<uint4 *>(&s.v[at]) = *reinterpret_cast<const uint4 *>(x);
      }
    }
    mark(c, WY_KK, wy_tid == WARPGROUP); // the second warpgroup's gates and beta v are in
    sync();                              // A0 and beta v are in
    mark(c, WY_A0, wy_tid == 0);
    if constexpr (!A_GIVEN) {
      unit_lower_inverse(
          s.f.a0, s.solve, [](int, int, float) {}, wy_tid, WY_THREADS, sync);
      mark(c, WY_SOLVE, wy_tid == 0);
      In *A = static_cast<In *>(p.A); // (the solve ends synchronised: A0's place is free)
#pragma unroll
      for (int r = 0; r < C * (C / 8) / WY_THREADS; ++r) { // A in the input type, 8 a store
        const int e = wy_tid + r * WY_THREADS, i = e % C, j0 = 8 * (e / C);
        alignas(16) In y[8];
#pragma unroll
        for (int u = 0; u < 8; ++u)
          y[u] = to<In>(j0 / SUB > i / SUB ? 0.0f : s.solve.a[i][j0 + u]);
        *reinterpret_cast<uint4 *>(&s.a16[tile_at<C>(i, j0)]) = *reinterpret_cast<const uint4 *>(y);
        if (A && v0 == 0 && i < n)
          *reinterpret_cast<uint4 *>(A + at_score(rows.bos + i, hd, j0, d)) =
              *reinterpret_cast<const uint4 *>(y);
      }
    }
#pragma unroll
    for (int r = 0; r < C * (K / 8) / WY_THREADS; ++r) { // beta k e^{g_cum}, w's right factor
      const int e = wy_tid + r * WY_THREADS, i = e % C, c0 = 8 * (e / C), at = tile_at<C>(i, c0);
      alignas(16) In x[8];
      *reinterpret_cast<uint4 *>(x) = *reinterpret_cast<const uint4 *>(&kt[at]);
#pragma unroll
      for (int u = 0; u < 8; ++u)
        x[u] = to<In>(s.beta[s3][i] * val(x[u]) * s.row_up[s2][i]);
      *reinterpret_cast<uint4 *>(&s.f.bk[at]) = *reinterpret_cast<const uint4 *>(x);
    }
    wgmma::fence_shared_for_async();
    sync();
    mark(c, WY_FACTORS, wy_tid == 0);
    // w = A (beta k e^{g_cum}) by 64 keys at a time (the first warpgroup), u = A (beta v) (the
    // second), one product's accumulators at a time
#pragma unroll
    for (int m = 0; m < K / 64; ++m) {
      const bool is_u = !wy_first;
      if (is_u && m > 0)
        break;
      float acc[32] = {};
      wgmma::fence();
      issue_product<In, true>(
          acc, C, [&](int k0) { return wgmma::k_major<C>(a16_of(c), k0); },
          [&](int k0) { return wgmma::mn_major<C>(is_u ? s.v : &s.f.bk[64 * C * m], k0); }, false);
      wgmma::commit();
      wgmma::wait<0>();
#pragma unroll
      for (int e = 0; e < 32; e += 2) {
        const int i = wgmma::d_row(e), j = wgmma::d_col(e);
        *reinterpret_cast<std::uint32_t *>(is_u ? &s.u[s2][tile_at<C>(i, j)]
                                                : &s.w[s2][tile_at<C>(i, 64 * m + j)]) =
            mma::pack_rounded<In>(acc[e], acc[e + 1]);
      }
    }
    mark(c, wy_first ? WY_W : WY_U, tid == 0);
  };

  // -- the state (the state warpgroup): keys [64 m, +64) of the block's columns in state[m]
  float state[K / 64][32];
  // h's copy in the input type, for the next chunk's products
  const auto copy_state = [&] {
#pragma unroll
    for (int m = 0; m < K / 64; ++m)
#pragma unroll
      for (int e = 0; e < 32; e += 2)
        *reinterpret_cast<std::uint32_t *>(
            &s.h[tile_at<K>(64 * m + wgmma::d_row(e), wgmma::d_col(e))]) =
            mma::pack_rounded<In>(state[m][e], state[m][e + 1]);
    wgmma::fence_shared_for_async();
  };
  // chunk c's v_new = u - w h and v_end = v_new . e^{gl - g_cum}, by the state warpgroup (not in
  // the plain form)
  const auto v_new_step = [&](int c) {
    const int s2 = c % 2;
    float vacc[32] = {};
    wgmma::fence();
    issue_product<In, true>(
        vacc, K, [&](int k0) { return wgmma::k_major<C>(s.w[s2], k0); },
        [&](int k0) { return wgmma::mn_major<K>(s.h, k0); }, false);
    wgmma::commit();
    mark(c, STATE_ISSUED, tid == 0);
    if constexpr (STATES) // the backward's h at the chunk's start, while w h runs
      store_tile<K, BV>(static_cast<In *>(p.h16) + at_state(first + c, hd, 0, v0, d), d.V, s.h, K,
                        tid);
    const float to_end[2] = {s.row_to_end[s2][wgmma::d_row(0)], s.row_to_end[s2][wgmma::d_row(2)]};
    wgmma::wait<0>();
    mark(c, STATE_WH, tid == 0);
#pragma unroll
    for (int e = 0; e < 32; e += 2) { // v_new = u - w h, and v_end = v_new . e^{gl - g_cum}
      const int at = tile_at<C>(wgmma::d_row(e), wgmma::d_col(e));
      const float f = to_end[(e % 4) / 2];
      const float y0 = val(s.u[s2][at]) - vacc[e], y1 = val(s.u[s2][at + 1]) - vacc[e + 1];
      *reinterpret_cast<std::uint32_t *>(&s.v_new[at]) = mma::pack_rounded<In>(y0, y1);
      *reinterpret_cast<std::uint32_t *>(&s.v_end[at]) = mma::pack_rounded<In>(f * y0, f * y1);
    }
    wgmma::fence_shared_for_async();
    mark(c, STATE_V_NEW, tid == 0);
    if constexpr (!STATES)
      mma::barrier_arrive(V_NEW_BARRIER, 2 * WARPGROUP); // the output may read v_new
    mma::barrier_sync(STATE_BARRIER, WARPGROUP);         // every row of v_end is in
  };
  const auto state_step = [&](int c) {
    const int s3 = c % 3, s2 = c % 2;
    tma::wait_barrier(&s.wy_done[s2], (c / 2) & 1); // chunk c's w and u are in
    mark(c, STATE_WY_DONE, tid == 0);
    if constexpr (!PLAIN)
      v_new_step(c);
    else // (v_new and v_end came a step before)
      mark(c, STATE_V_NEW, tid == 0);
    const float decay = s.decay[s2];
#pragma unroll
    for (int m = 0; m < K / 64; ++m)
#pragma unroll
      for (int e = 0; e < 32; ++e)
        state[m][e] *= decay;
    wgmma::fence();
#pragma unroll
    for (int m = 0; m < K / 64; ++m) // h' = e^{gl} h + k^T v_end
      issue_product<In, true, true>(
          state[m], C, [&](int k0) { return wgmma::mn_major<C>(&s.k[s3][64 * C * m], k0); },
          [&](int k0) { return wgmma::mn_major<C>(v_end_of(c), k0); }, true);
    wgmma::commit();
    if constexpr (STATES) // the backward's v_new, while h's update runs
      store_tile<C, BV>(static_cast<In *>(p.v_new16) + at_v(rows_of(c).bos, hd, v0, d), values,
                        s.v_new, rows_of(c).n, tid);
    wgmma::wait<0>();
    mark(c, STATE_UPDATE, tid == 0);
    if constexpr (!STATES)
      mma::barrier_sync(H_FREE_BARRIER, 2 * WARPGROUP); // the output is done with h
    copy_state();
    mark(c, STATE_COPY, tid == 0);
    if (c + 2 < chunks) // w, u and the gates of index s2 read
      tma::arrive(&s.places_read[s2]);
  };

  // -- chunk c's output (the output warpgroup); in the states form with p.Aqk, its Aqk alone
  //    (scores_step), by the same products and roundings as the forward's
  In *o = static_cast<In *>(p.o), *Aqk = static_cast<In *>(p.Aqk);
  const auto issue_scores = [&](float(&sacc)[32], int c) { // q k^T, issued (not waited for)
    issue_product<In, false>(
        sacc, K, [&](int k0) { return wgmma::k_major<C>(s.q[c % 2], k0); },
        [&](int k0) { return wgmma::k_major<C>(s.k[c % 3], k0); }, false);
    wgmma::commit();
  };
  // Aqk_ij = scale (q k^T)_ij e^{g_cum_i - g_cum_j} (j <= i) at this thread's entries e and e + 1,
  // rounded to the input type, two values in one word
  const auto score_pair = [&](const float(&sacc)[32], const AccGates &gates, int e) {
    const int i = wgmma::d_row(e), j = wgmma::d_col(e);
#ifdef RULEPROOF_PLANTED_BUG // gpu_check_planted only: a deliberate bug, the plain form's
                             // (simple_gla's) scores without their diagonal
    const auto kept = [&](int col) { return PLAIN ? col < i : col <= i; };
#else
    const auto kept = [&](int col) { return col <= i; };
#endif
    const auto score = [&](int u) {
      return kept(j + u) ? sacc[e + u] * d.scale * gates.decay(e + u) : 0.0f;
    };
    return mma::pack_rounded<In>(score(0), score(1));
  };
  const auto output_step = [&](int c) {
    const ChunkRows rows = rows_of(c);
    const int s2 = c % 2;
    float oacc[32] = {}, sacc[32] = {};
    wgmma::fence();
    issue_product<In, true>(
        oacc, K, [&](int k0) { return wgmma::k_major<C>(s.q[c % 2], k0); },
        [&](int k0) { return wgmma::mn_major<K>(s.h, k0); }, false);
    wgmma::commit();
    issue_scores(sacc, c);
    mark(c, OUTPUT_ISSUED, tid == 0);
    const AccGates gates(s.g_cum[s2]);
    const float up[2] = {d.scale * s.row_up[s2][wgmma::d_row(0)],
                         d.scale * s.row_up[s2][wgmma::d_row(2)]};
    wgmma::wait<1>(); // q h is done
    mark(c, OUTPUT_QH, tid == 0);
    mma::barrier_arrive(H_FREE_BARRIER, 2 * WARPGROUP); // h's place may take the next copy
    wgmma::wait<0>();
#pragma unroll
    for (int e = 0; e < 32; e += 2) { // Aqk, and o's state term scaled by scale e^{g_cum}
      const int i = wgmma::d_row(e), j = wgmma::d_col(e);
      const std::uint32_t pair = score_pair(sacc, gates, e);
      *reinterpret_cast<std::uint32_t *>(&s.aqk[tile_at<C>(i, j)]) = pair;
      oacc[e] *= up[(e % 4) / 2];
      oacc[e + 1] *= up[(e % 4) / 2];
    }
    wgmma::fence_shared_for_async();
    mark(c, OUTPUT_SCORES, tid == 0);
    mma::barrier_sync(OUTPUT_BARRIER, WARPGROUP); // every row of Aqk is in
    if constexpr (!PLAIN)
      mma::barrier_sync(V_NEW_BARRIER, 2 * WARPGROUP); // and v_new (the plain form's, v, in u's
                                                       // place, came a step before)
    mark(c, OUTPUT_V_NEW, tid == 0);
#ifdef RULEPROOF_PLANTED_BUG // gpu_check_planted only: a deliberate bug, the output takes u for
                             // v_new in its scores' term
    const In *right = s.u[s2];
#else
    const In *right = PLAIN ? s.u[s2] : s.v_new;
#endif
    wgmma::fence();
    issue_product<In, true>(
        oacc, C, [&](int k0) { return wgmma::k_major<C>(s.aqk, k0); },
        [&](int k0) { return wgmma::mn_major<C>(right, k0); }, true);
    wgmma::commit();
    if (Aqk) // the block's rows of Aqk from its tile, while Aqk v_new runs
      store_tile<C, C>(Aqk + at_score(rows.bos, hd, 0, d), static_cast<long>(d.H) * C, s.aqk,
                       min(rows.n, aqk_to), tid, aqk_from);
    wgmma::wait<0>();
#pragma unroll
    for (int e = 0; e < 32; e += 2) {
      const int i = wgmma::d_row(e), j = wgmma::d_col(e);
      if (i < rows.n)
        *reinterpret_cast<std::uint32_t *>(o + at_v(rows.bos + i, hd, v0 + j, d)) =
            mma::pack_rounded<In>(oacc[e], oacc[e + 1]);
    }
    mark(c, OUTPUT_STORED, tid == 0);
    if (c + 2 < chunks) // q and the gates of index s2 read
      tma::arrive(&s.places_read[s2]);
  };
  // the states form's: chunk c's Aqk stored, as output_step stores it
  const auto scores_step = [&](int c) {
    const ChunkRows rows = rows_of(c);
    float sacc[32] = {};
    wgmma::fence();
    issue_scores(sacc, c);
    const AccGates gates(s.g_cum[c % 2]);
    wgmma::wait<0>();
#pragma unroll
    for (int e = 0; e < 32; e += 2) {
      const int i = wgmma::d_row(e), j = wgmma::d_col(e);
      if (i >= aqk_from && i < min(rows.n, aqk_to))
        *reinterpret_cast<std::uint32_t *>(Aqk + at_score(rows.bos + i, hd, j, d)) =
            score_pair(sacc, gates, e);
    }
    if (c + 2 < chunks) // q and the gates of index c % 2 read
      tma::arrive(&s.places_read[c % 2]);
  };

  // -- the chunks in order: step c works on chunk c (state, output) and c + 1 (WY). Each role
  //    runs its own loop (so that one role's registers are not kept live through another's), and
  //    the roles meet once a step at barrier 0 from their own instructions: barrier.sync without
  //    .aligned, which lets threads reach it from different places. The first WY warpgroup copies
  //    each chunk's keys and gates, the second its queries and values.
  const auto step_done = [] { asm volatile("barrier.sync 0;\n" ::: "memory"); };
  if (threadIdx.x == 0) { // the barriers, before any copy or step
    if (p.tma)
      for (int b = 0; b < 3; ++b)
        tma::init_barrier(&s.keys_arrived[b], 1);
    for (int b = 0; b < 2; ++b) { // the state's warpgroup and the output's (STATES: with Aqk)
      tma::init_barrier(&s.places_read[b], STATES && !scores_out ? WARPGROUP : 2 * WARPGROUP);
      tma::init_barrier(&s.wy_done[b], WY_THREADS);
    }
  }
  __syncthreads();
  if (wg == STATE_WG) {
#pragma unroll
    for (int m = 0; m < K / 64; ++m)
#pragma unroll
      for (int e = 0; e < 32; ++e)
        state[m][e] =
            p.s0 ? p.s0[at_state(n_seq, hd, 64 * m + wgmma::d_row(e), v0 + wgmma::d_col(e), d)]
                 : 0.0f;
    copy_state();
    step_done(); // the state's first copy is in
    step_done(); // chunk 0's WY factors are in
    for (int c = 0; c < chunks; ++c) {
      state_step(c);
      step_done();
      mark(c, STATE_END, tid == 0);
    }
    if (p.s_end)
#pragma unroll
      for (int m = 0; m < K / 64; ++m)
#pragma unroll
        for (int e = 0; e < 32; ++e)
          p.s_end[at_state(n_seq, hd, 64 * m + wgmma::d_row(e), v0 + wgmma::d_col(e), d)] =
              state[m][e];
  } else if (wg == OUTPUT_WG) {
    step_done();
    step_done();
    for (int c = 0; c < chunks; ++c) {
      if constexpr (!STATES)
        output_step(c);
      else if (scores_out) // (else the output warpgroup only meets the others)
        scores_step(c);
      step_done();
    }
  } else {
    if (wy_first && chunks > 0) {
      copy_keys(0);
      mma::commit_copies();
      mma::wait_copies();
      keys_in(0);
      wgmma::fence_shared_for_async();
    } else if (chunks > 0) { // chunk 0's values, waited for inside wy(0)
      copy_values(0);
      mma::commit_copies();
    }
    step_done(); // chunk 0's keys and gates are in
    for (int c = -1; c < chunks; ++c) {
      if (wy_first) {
        if (c + 2 < chunks)
          copy_keys(c + 2);
        mma::commit_copies();
        if (STATES && v0 == 0 && c >= 0) { // the backward's w of chunk c (made a step before)
          const ChunkRows rows = rows_of(c);
          store_tile<C, K>(static_cast<In *>(p.w) + at_k(rows.bos, hd, 0, d), keys, s.w[c % 2],
                           rows.n, tid);
        }
      }
      if (c + 1 < chunks) {
        wy(c + 1);
        wgmma::fence_shared_for_async(); // w, read by the state's wgmma
        tma::arrive(&s.wy_done[(c + 1) % 2]);
        mark(c + 1, WY_ARRIVED, wy_tid == 0);
      }
      if (wy_first) {
        mma::wait_copies();
        if (c + 2 < chunks)
          keys_in(c + 2);
      } else if (c + 2 < chunks) { // the next chunk's values, once u's product is done with v,
        copy_values(c + 2);        // and this chunk's queries in
        mma::commit_copies();
        mma::wait_copies_but_last();
      } else {
        mma::wait_copies();
      }
      mark(c + 1, wy_first ? WY_WAITED : WY_WAITED_U, tid == 0);
      wgmma::fence_shared_for_async();
      step_done(); // chunk c + 1's tiles, WY factors and state copy are in
      mark(c + 1, WY_STEP_END, wy_tid == 0);
    }
  }
}

template <class In, int K, int V, bool A_GIVEN, bool STATES = false, bool PLAIN = false>
void launch_fused(const DeltaFusedPass &p, const DeviceChunkTable &t, const ChunkDims &d) {
  const int bytes = static_cast<int>(sizeof(FusedShared<In, K>));
  auto *kernel = chunk_delta_fused_tc_kernel<In, K, V, A_GIVEN, STATES, PLAIN>;
  allow_shared_memory(kernel, bytes, "chunk_delta_fused_tc_kernel");
  // k [B * T, H * K] and A [B * T, H * C], by 64 rows (none where every sequence is empty: a
  // tensor map has no dimension of size 0, and no block copies anything)
  CUtensorMap keys_map{}, a_map{};
  if (p.tma && p.rows > 0) {
    const long HK = static_cast<long>(d.H) * K, HC = static_cast<long>(d.H) * C;
    keys_map = tma::encode_rows_map(p.k, p.rows, HK, HK, C, d.fp16);
    if (A_GIVEN)
      a_map = tma::encode_rows_map(p.A, p.rows, HC, HC, C, d.fp16);
  }
  kernel<<<dim3(t.N, d.H, V / FUSED_BV), FUSED_THREADS, bytes>>>(p, t, d, keys_map, a_map);
}

} // namespace

bool runs_sm90a() {
  static const bool runs = [] {
    int device = 0, major = 0, minor = 0;
    return cudaGetDevice(&device) == cudaSuccess &&
           cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) ==
               cudaSuccess &&
           cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) ==
               cudaSuccess &&
           major == 9 && minor == 0;
  }();
  return runs;
}

namespace {
/// The kernel of form (A_GIVEN, STATES, PLAIN) for the call's input type and sizes; `name` for its
/// error.
template <bool A_GIVEN, bool STATES, bool PLAIN>
void launch_form(const DeltaFusedPass &p, const DeviceChunkTable &t, const ChunkDims &d,
                 const char *name) {
  if (t.N == 0)
    return;
  with_sizes(d, [&](auto y, auto ks, auto vs) {
    using In = decltype(y);
    constexpr int K = decltype(ks)::value, V = decltype(vs)::value;
    launch_fused<In, K, V, A_GIVEN, STATES, PLAIN>(p, t, d);
  });
  check(name);
}
} // namespace

void launch_chunk_delta_fused_tc(const DeltaFusedPass &p, const DeviceChunkTable &t,
                                 const ChunkDims &d, bool a_given) {
  if (a_given)
    launch_form<true, false, false>(p, t, d, "chunk_delta_fused_tc_kernel");
  else
    launch_form<false, false, false>(p, t, d, "chunk_delta_fused_tc_kernel");
}

void launch_chunk_delta_fused_states_tc(const DeltaFusedPass &p, const DeviceChunkTable &t,
                                        const ChunkDims &d) {
  launch_form<true, true, false>(p, t, d, "chunk_delta_fused_tc_kernel (states)");
}

void launch_chunk_gla_fused_tc(const DeltaFusedPass &p, const DeviceChunkTable &t,
                               const ChunkDims &d) {
  launch_form<false, false, true>(p, t, d, "chunk_delta_fused_tc_kernel (plain)");
}

} // namespace ruleproof::gpu::detail
