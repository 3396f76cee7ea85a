// ruleproof: the chunkwise GLA forward on tensor cores (gla: per-key gate; simple_gla: scalar
// gate), Hopper (sm_90). The path KernelPath::tensor_cores of chunk_gla_fwd (gpu/chunk_gla.hpp);
// the CUDA-core path is gpu/chunk_gla.cu. Every matrix product runs as mma.sync m16n8k16 with
// operands in the input type (bf16 or fp16) and fp32 sums (gpu/detail/mma.cuh); gates, their
// exponentials and the running state stay fp32. Judged under the tensor-core policy
// (gpu/twin.hpp).
//
// CPU reference, one grep away: reference/gla/chunk.hpp (chunk_forward_pass: the scores, the
// output and the state passed on, of each chunk) and reference/shared/chunk.hpp
// (chunk_local_cumsum, ChunkDecay); simple_gla is gla with its gate repeated over the keys
// (reference/simple_gla/simple_gla.hpp).
//
// Two kernels. Per chunk of n <= 64 rows, g_cum its local cumulative gate, q~ = scale q, gl =
// g_cum of row n - 1 (rows past n are read as zeros, their gates as 0, so g_cum stays flat):
//   A_ij  = sum_c q~_ic k_jc exp(g_cum_ic - g_cum_jc)    (j <= i)                 [scores]
//   o_i   = (q~_i . e^{g_cum_i}) h + sum_{j<=i} A_ij v_j                         [chunk_fwd_o]
//   h'    = Diag(e^{gl}) h + (K . e^{gl - g_cum})^T V                            [chunk_fwd_h]
// chunk_gla_scores_tc_kernel: grid (NC, H), 8 warps, every chunk at once: g_cum, the scores A,
// and the two decayed factors qd = q~ . e^{g_cum} and kd = k . e^{gl - g_cum}, all three stored in
// the input type (the operands of the products that read them), with e^{gl} in fp32; two warps
// share each 16-row block of the scores. A scalar gate's scores go out from the accumulators and
// its gates take one column: 36 KB at K = 128, four blocks an SM (60 registers).
// chunk_gla_state_tc_kernel: grid (N, H, V / 64), 8 warps (and 8 for the output, below); the block
// walks its sequence's chunks in order with its K x 64 tile of the state in the warps'
// accumulators, so that h never leaves the chip (the state update and the output fused), each
// chunk's qd, kd, v and A copied in (cp.async) while the block works on the one before: nothing but
// tensor-core products and one decay per state row in its loop. The forwards of a scalar gate
// (simple_gla, gated_delta_rule) pass q and k undecayed with each row's e^{g_cum} and e^{gl -
// g_cum} (TcStatePass::row_up): the output's state term q h is scaled by scale e^{g_cum} in fp32
// after its product, and v (v_new) by e^{gl - g_cum} before it is rounded for the update, so that
// the scores (WY) kernel stores no qd and kd. gated_delta_rule's backward passes take row factors
// too: forwards as its forward; backwards with left q and kd = k, dO scaled by scale e^{g_cum} and
// rounded once for the update (in v_end's place), and dv2's k dh scaled by e^{gl - g_cum} in fp32
// after its product.
//
// The scores' decays, per key (gla), where no exp may overflow however strong the gates:
// rows fall into four 16-row sub-chunks; for row i of sub-chunk I, the reference row r = 16 I (the
// first of I) splits each term as
//   (q~_ic e^{g_cum_ic - g_cum_rc}) (k_jc e^{g_cum_rc - g_cum_jc}),
// both factors rounded to the input type, as the tensor-core twin rounds its factored operands.
// Below I's diagonal block (j < r <= i) both exponents are <= 0, since g_cum falls down the chunk
// (g <= 0): each factor is at most |q~_ic| or |k_jc|, and an exponential that underflows to zero
// stands for a term below fp32's smallest normal number times |q~ k|. Inside the diagonal block
// (r <= j <= i) the right factor's exponent is g_cum_rc - g_cum_jc <= g_cum_rc - g_cum_ic, row i's
// own spread: row i is factored there when its spread is at most SPREAD on every key, so that no
// factor exceeds e^SPREAD |k|: 40 for bf16; for fp16, whose largest value is 65504, 8, lowered to
// log(65504 / m) when the sub-chunk's largest key m passes 65504 e^-8 = 21.97 (spread_limit_for
// and factor_magnitude, gpu/detail/gla_tc.cuh; gpu/tests/twin_tests.cpp shows a limit of 40
// overflowing fp16 at |k| <= 1, and the limit of 8 at keys 32 times as large); the rows past
// it (the factored rows are a prefix, and deciding row by row keeps the output causal to the last
// bit, as reference/shared/chunk.hpp's ChunkDecay does) take each term's exp(g_cum_ic - g_cum_jc)
// <= 1 on CUDA cores, in fp32. So the extreme-gate properties (gates near 0: every decay 1, the
// scores plain q~ k^T; gates near -inf: every decay 0, each row its own term) hold as for the
// CUDA-core kernels. e^{g_cum} <= 1 and e^{gl - g_cum} <= 1 likewise.
// simple_gla's scalar gate needs no split: A = (q~ k^T) . exp(g_cum_i - g_cum_j), one exp per
// (row, column), on the tensor-core product of the plain q~ and k.
// No launcher of the tensor-core path waits for its kernels (check, not check_sync), and the
// chunk table is copied in queued behind the work before it (ChunkTable): a call queues its
// kernels and returns, and a fault in one surfaces at the next call that waits (a download).
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string_view>
#include <type_traits>

#include "detail/chunk_device.cuh" // load, at_k, at_v, at_state, at_score, chunk_rows, check,
                                   // allow_shared_memory, with_input_type, in, out, C, MAX_K
#include "detail/gla_launch.hpp"
#include "detail/gla_tc.cuh" // to, val, copy_rows_async, ChunkGates, copy_gates_async, sum_chunk_gates, wide_rows,
                             // factored_scores, pairwise_scores, rows_times, PAD, SUB
#include "detail/mma.cuh"

namespace ruleproof::gpu::detail {

namespace {

using namespace tc;

// ---------------------------------------------------------------------------------------
// chunk_gla_scores_tc: grid (NC, H), SCORE_THREADS threads, sizeof(ScoreShared<In, K, SCALAR>)
// bytes of dynamic shared memory. Writes A16 [B*T, H, C] (zero above the diagonal), qd and kd (q's
// shape), all in the input type; decay [NC, H, G] = e^{gl}; A_out (fp32 A) and g_cum_out when
// given; with a scalar gate, row_up and row_to_end (store_row_factors) when given, in place of
// qd and kd.
// 8 warps: warp w, rows [16 (w % 4), +16), the column tiles nt (8 columns each) of parity w / 4
constexpr int SCORE_THREADS = 256;

template <class T, int K, bool SCALAR> struct ScoreShared {
  static constexpr int LK = K + PAD, LA = C + 4;
  T q[C][LK], k[C][LK];
  float a[SCALAR ? 1 : C][LA]; // per-key gates: the scores, before they go out (a scalar gate's
                               // go out from the accumulators)
  ChunkGates<K, SCALAR> gates; // a scalar gate's in the room of one gate
};

/// A scalar gate's scores kernel's blocks an SM: 35 KB of shared memory at K = 128 and 45
/// registers a thread (scalar_scores_out with the warp's parity known when compiled; 69 and three
/// blocks before). Five were faster than six (40 registers) on an H200: 60.5-61.6 us a launch
/// against 67.0-68.6 (reports/gpu/tensor_core.md, "The other parity's accumulators").
constexpr int SCALAR_SCORE_BLOCKS = 5;

template <class In, int K, bool SCALAR>
__global__ void __launch_bounds__(SCORE_THREADS, SCALAR ? SCALAR_SCORE_BLOCKS : 1)
    chunk_gla_scores_tc_kernel(const In *q, const In *k, const float *g, In *A16, In *qd, In *kd,
                               float *decay, float *row_up, float *row_to_end, float *A_out,
                               float *g_cum_out, DeviceChunkTable t, ChunkDims d) {
  using S = ScoreShared<In, K, SCALAR>;
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  S &s = *reinterpret_cast<S *>(shared_bytes);
  const int c = blockIdx.x, hd = blockIdx.y, tid = threadIdx.x, warp = tid / 32;
  const ChunkRows rows = chunk_rows(t, c);
  const int n = rows.n;
  float(*g_cum)[ChunkGates<K, SCALAR>::LG] = s.gates.g;
  const long row_at = static_cast<long>(rows.bos) * d.H + hd; // row bos of head hd
  copy_gates_async<K, SCALAR>(s.gates, g, rows, hd, d); // first, and summed while q and k arrive
  mma::commit_copies();
  copy_rows_async(&s.q[0][0], S::LK, q + row_at * K, static_cast<long>(d.H) * K, C, n, K);
  copy_rows_async(&s.k[0][0], S::LK, k + row_at * K, static_cast<long>(d.H) * K, C, n, K);
  mma::commit_copies();
  mma::wait_copies_but_last(); // the gates
  sum_chunk_gates<K, SCALAR>(s.gates, rows, hd, d, g_cum_out);
  mma::wait_copies();
  __syncthreads();

  // -- qd, kd and e^{gl} for the sequential kernel
  store_decayed_factors<In, K, SCALAR>(&s.q[0][0], &s.k[0][0], S::LK, s.gates, rows, c, hd, d, qd,
                                       kd, decay);
  if constexpr (SCALAR)
    store_row_factors(s.gates, rows, hd, d, row_up, row_to_end);

  // -- the scores of the warp's rows [row0, row0 + 16), its tiles of columns [0, row0 + 16)
  const int row0 = SUB * (warp % 4), parity = warp / 4;
  if constexpr (SCALAR) {    // A = (q~ k^T) . exp(g_cum_i - g_cum_j), out from the accumulators;
                             // the warp's parity known when compiled (SCALAR_SCORE_BLOCKS)
#ifdef RULEPROOF_PLANTED_BUG // gpu_check_planted only: a deliberate bug, the diagonal dropped
    constexpr bool diagonal = false;
#else
    constexpr bool diagonal = true;
#endif
    const auto scores = [&](auto side) {
      scalar_scores_out<In, K>(&s.q[0][0], &s.k[0][0], S::LK, g_cum, row0, side, rows, hd, d, A16,
                               A_out, diagonal);
    };
    if (parity == 0)
      scores(std::integral_constant<int, 0>{});
    else
      scores(std::integral_constant<int, 1>{});
  } else {
    const int r = row0;      // the reference row
#ifdef RULEPROOF_PLANTED_BUG // gpu_check_planted only: a deliberate bug, the reference row one
                             // early
    const int r_right = r > 0 ? r - 1 : 0;
#else
    const int r_right = r;
#endif
    per_key_scores<In, K>(&s.q[0][0], &s.k[0][0], S::LK, g_cum, row0, parity, r_right, d.scale,
                          [&](int i, int j, float x) { s.a[i][j] = x; });
    __syncthreads();
    for (int e = tid; e < n * C; e += SCORE_THREADS) {
      const int i = e / C, j = e % C;
      A16[at_score(rows.bos + i, hd, j, d)] = to<In>(s.a[i][j]);
      if (A_out)
        A_out[at_score(rows.bos + i, hd, j, d)] = s.a[i][j];
    }
  }
}

// ---------------------------------------------------------------------------------------
// chunk_gla_state_tc: grid (N, H, V / TC_BV), STATE_THREADS threads, sizeof(StateShared<In, K, G>)
// bytes of dynamic shared memory; one run of a TcStatePass (gpu/detail/gla_launch.hpp). The
// block walks its sequence's chunks, forwards or backwards, with its K x 64 tile of the state s
// in the warps' accumulators:
//   s <- Diag(decay) s + left^T right        (forward: chunk_fwd_h, left kd, right v;
//                                             backward: chunk_bwd_dh, left qd, right dO)
// and, with an output (the forward), o = qd s + A v on the chunk's rows before the update, so
// that h never leaves the chip. With w, the delta rules: forwards (chunk_delta_fwd_h) the right
// factor is v_new = u - w s; backwards (chunk_bwd_dhu, left qd, right dO) dv2 = A^T dO + kd s,
// and s <- Diag(decay) s + qd^T dO - w^T dv2. With left2 and right2 (dplr's states, no output),
// s <- Diag(decay) s + left^T v_new + left2^T right2, the two in the places of qd and A. Each
// chunk's tiles are copied in (cp.async) while the block works on the one before.
//   output: warp w computes rows [16 (w % 4), +16), columns [B/2 (w / 4), +B/2) of the tile
//           (B = TC_BV columns);
//   state:  warp w holds keys [16 (w % (K / 16)), +16), columns [B/S (w / (K / 16)), +B/S)
//           of the tile, S = 8 / (K / 16) warps sharing a key tile.
// With output warps (a pass with an output, by default; RULEPROOF_STATE_OUTPUT=own leaves them
// out), eight more warps take the output, so that it leaves the chain of dependent steps from one
// chunk's state to the next: output warp w (w = 0..7 past the state warps) takes the output's rows
// and columns above, qd h while the state warps make v_new, then A v_new (or A v) while they update
// the state. The state warps meet at barrier STATE_BARRIER alone; with w they arrive at
// V_NEW_BARRIER once v_new is in, where the output warps wait; with row factors alone (simple_gla)
// the two meet there likewise once v_end is in, so that every step has the same barriers (b11d346,
// without this meeting, drew 205 write-after-read reports from racecheck on simple_gla;
// reports/gpu/tensor_core.md). Each step's __syncthreads keeps the output warps within the chunk
// whose h copy, v_new and tiles they read (h is double-buffered, v_new and the tiles are written
// after that barrier).
// gated_delta_rule's backwards pass with dh's uses (TcStatePass::dk_s, RULEPROOF_DELTA_DH=uses)
// takes the eight more warps for what the backward kernel would read dh for, so that dh
// is never stored: from the chunk's copy of dh in s.h and the forward's v_new (a tile they copy
// themselves) and h (read from memory), warp w makes rows [16 (w % 4), +16) and keys [K/2 (w / 4),
// +K/2) of dk_s = v_new dh^T over the block's 64 values, and the warps together the block's
// sum(h . dh) (h_dh, one part a block, added by the backward kernel). At V = 128 the two blocks of
// a sequence and head each add their half of v_new dh^T into dk_s (zeroed before the pass) by
// fp32 atomic adds of two values: two addends onto zero, so the sum is the same whichever block
// adds first. They run steps of their own, off the state warps' barriers: the state warps arrive
// at FULL + b once they have written dh's copy b and the uses' warps wait there; the uses' warps
// arrive at EMPTY + b once they have read it, where the state warps wait before they write it two
// steps on. So a step of the uses may take as long as a step of the state, and its waits (h's
// loads above all) stay off the state's chain.
constexpr int STATE_THREADS = 256, STATE_WARPS = STATE_THREADS / 32;
constexpr int OUTPUT_THREADS = 256; // the output warps (unless RULEPROOF_STATE_OUTPUT=own)
constexpr int STATE_BARRIER = 1, V_NEW_BARRIER = 2;
// the state gradient's uses (TcStatePass::dk_s): the eight more warps meet there once the chunk's
// v_new is in, and once each has its part of sum(h . dh) in
constexpr int USES_BARRIER = 3;
// the state warps and the uses' warps hand over the state gradient's two copies in s.h: FULL + b
// (the state warps arrive once copy b is written, the uses' warps wait), EMPTY + b (the uses' warps
// arrive once they have read it, the state warps wait before writing it again)
constexpr int FULL = 4, EMPTY = 6;
constexpr int O_TILES = TC_BV / 2 / 8; // n tiles of a warp's output: half the tile's columns

/// One chunk's operands, copied in while the chunk before is worked on (qd and a: with an output
/// only).
template <class T, int K, int G> struct alignas(16) ChunkTiles {
  static constexpr int LK = K + PAD, LV = TC_BV + PAD, LC = C + PAD;
  T left[C][LK];  // kd = k e^{gl - g_cum} or qd = q~ e^{g_cum}: the update's left factor
  T right[C][LV]; // v or dO
  T qd[C][LK];    // q~ e^{g_cum}: the left factor of the output's state term (the delta rules'
                  // backward: kd, dv2's; dplr's states: left2)
  T a[C][LC];     // the scores (dplr's states: right2, TC_BV columns)
  T w[C][LK];     // the delta rules' w (with TcStatePass::w)
  float decay[G]; // e^{gl}
  float row_up[C], row_to_end[C]; // with TcStatePass::row_up
};
template <class T, int K, int G> struct StateShared {
  ChunkTiles<T, K, G> tiles[2];
  // the state at the start of a chunk, rounded to T (with an output, or stored in T), for chunks
  // of even and odd steps: a chunk's copy is written while the chunk before may still read its own
  T h[2][K][TC_BV + PAD];
  T v_new[C][TC_BV + PAD]; // the delta rules: u - w h, the update's right factor
  T v_end[C][TC_BV + PAD]; // with row factors: v_new . e^{gl - g_cum}, the update's right factor
};
/// The backwards pass's places for the state gradient's uses (TcStatePass::dk_s): the forward's
/// v_new of a chunk (two places, as the tiles') and the eight more warps' parts of sum(h . dh).
template <class T> struct alignas(16) DhUsesShared {
  T v_new[2][C][TC_BV];
  float h_dh[OUTPUT_THREADS / 32];
};
template <class T, int K, int G> struct StateWithUsesShared : StateShared<T, K, G> {
  DhUsesShared<T> uses;
};

/// Starts copying chunk c's tiles into `x` (rows past its end zero), by the block's THREADS
/// threads.
template <int THREADS, class T, int K, int G>
__device__ void copy_chunk(ChunkTiles<T, K, G> &x, const TcStatePass &p, ChunkRows rows, int c,
                           int hd, int v0, const ChunkDims &d) {
  using X = ChunkTiles<T, K, G>;
  const long row_at = static_cast<long>(rows.bos) * d.H + hd; // row bos of head hd
  const long keys = static_cast<long>(d.H) * K, values = static_cast<long>(d.H) * d.V;
  copy_tile_async<C, K, THREADS>(&x.left[0][0], X::LK, static_cast<const T *>(p.left) + row_at * K,
                                 keys, rows.n);
  copy_tile_async<C, TC_BV, THREADS>(
      &x.right[0][0], X::LV, static_cast<const T *>(p.right) + row_at * d.V + v0, values, rows.n);
  if (p.w)
    copy_tile_async<C, K, THREADS>(&x.w[0][0], X::LK, static_cast<const T *>(p.w) + row_at * K,
                                   keys, rows.n);
  const bool delta_backward = p.w && p.reverse;
  if (p.left2) { // the second update term, in the places of qd and A
    static_assert(X::LC == X::LV, "right2 takes the scores' place");
    copy_tile_async<C, K, THREADS>(&x.qd[0][0], X::LK, static_cast<const T *>(p.left2) + row_at * K,
                                   keys, rows.n);
    copy_tile_async<C, TC_BV, THREADS>(
        &x.a[0][0], X::LC, static_cast<const T *>(p.right2) + row_at * d.V + v0, values, rows.n);
  } else if (p.o || delta_backward) {
    copy_tile_async<C, K, THREADS>(
        &x.qd[0][0], X::LK, static_cast<const T *>(delta_backward ? p.kd : p.qd) + row_at * K, keys,
        rows.n);
    copy_tile_async<C, C, THREADS>(&x.a[0][0], X::LC, static_cast<const T *>(p.A16) + row_at * C,
                                   static_cast<long>(d.H) * C, rows.n);
  }
  if (p.row_up && threadIdx.x < C) {
    const int i = threadIdx.x;
    const long at = row_at + static_cast<long>(min(i, rows.n - 1)) * d.H;
    mma::copy_async<4>(&x.row_up[i], p.row_up + at, i >= rows.n);
    mma::copy_async<4>(&x.row_to_end[i], p.row_to_end + at, i >= rows.n);
  }
  if constexpr (G == 1) {
    if (threadIdx.x == 0)
      mma::copy_async<4>(&x.decay[0], p.decay + static_cast<long>(c) * d.H + hd, false);
  } else if (threadIdx.x < G / 4) {
    mma::copy_async<16>(&x.decay[4 * threadIdx.x],
                        p.decay + (static_cast<long>(c) * d.H + hd) * G + 4 * threadIdx.x, false);
  }
  mma::commit_copies();
}

/// ROWS_BACK: gated_delta_rule's backwards pass with row factors (w, reverse and row_up), an
/// instance of its own so that the other passes' code is the code without it; DH_USES (with it):
/// the state gradient's uses made here, TcStatePass::dk_s, by eight more warps.
template <class In, int K, bool SCALAR, bool ROWS_BACK = false, bool DH_USES = false>
__global__ void __launch_bounds__(STATE_THREADS + OUTPUT_THREADS)
    chunk_gla_state_tc_kernel(TcStatePass p, DeviceChunkTable t, ChunkDims d) {
  static_assert(!DH_USES || ROWS_BACK, "the state gradient's uses: gated_delta_rule's backwards");
  constexpr int G = SCALAR ? 1 : K;
  using S = std::conditional_t<DH_USES, StateWithUsesShared<In, K, G>, StateShared<In, K, G>>;
  using X = ChunkTiles<In, K, G>;
  constexpr int KEY_TILES = K / 16, SHARING = STATE_WARPS / KEY_TILES;
  constexpr int STATE_TILES = TC_BV / 8 / SHARING; // n tiles of a warp's state
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  S &s = *reinterpret_cast<S *>(shared_bytes);
  const int n_seq = blockIdx.x, hd = blockIdx.y, v0 = blockIdx.z * TC_BV;
  const int warp = threadIdx.x / 32;
  // output warps: warps past STATE_WARPS take the output (launched with a pass that has one)
  const bool output_warps = blockDim.x > STATE_THREADS, state_warp = warp < STATE_WARPS;
  const int key0 = 16 * (warp % KEY_TILES), scol0 = TC_BV / SHARING * (warp / KEY_TILES);
  const int owarp = warp % STATE_WARPS; // the output's rows and columns by the warp's place
  const int row0 = SUB * (owarp % 4), ocol0 = TC_BV / 2 * (owarp / 4);
  const int first = t.seq_first_chunk[n_seq], chunks = t.seq_first_chunk[n_seq + 1] - first;
  const int seq_bos = t.seq_bos[n_seq], seq_eos = t.seq_eos[n_seq];
  const auto index = [&](int step) { return p.reverse ? chunks - 1 - step : step; };
  const auto chunk = [&](int step) { return first + index(step); };
  const auto rows_of = [&](int step) { return sequence_chunk_rows(seq_bos, seq_eos, index(step)); };
  // the chunk of `step` copied into `x` by the whole block (with the state gradient's uses: by
  // the state warps)
  const auto copy = [&](X &x, int step) {
    if (output_warps && !DH_USES)
      copy_chunk<STATE_THREADS + OUTPUT_THREADS>(x, p, rows_of(step), chunk(step), hd, v0, d);
    else
      copy_chunk<STATE_THREADS>(x, p, rows_of(step), chunk(step), hd, v0, d);
  };
  In *o = static_cast<In *>(p.o), *s_chunks16 = static_cast<In *>(p.s_chunks16);

  // the state tile, in accumulators: tile nt covers keys key0.., columns scol0 + 8 nt..; at the
  // start of chunk c (before its update) copied to s.h[buffer] (with an output, or to be stored in
  // the input type) and written in fp32 where asked
  mma::Acc state[STATE_TILES];
  const bool shared_copy = o || s_chunks16 || DH_USES;
  const auto at_chunk = [&](int c, int buffer) {
#pragma unroll
    for (int nt = 0; nt < STATE_TILES; ++nt)
#pragma unroll
      for (int e = 0; e < 4; e += 2) { // the two values of a row in one 4-byte store
        const int key = key0 + mma::acc_row(e), col = scol0 + nt * 8 + mma::acc_col(e);
        if (shared_copy)
          *reinterpret_cast<std::uint32_t *>(&s.h[buffer][key][col]) =
              mma::pack_rounded<In>(state[nt].x[e], state[nt].x[e + 1]);
        if (p.s_chunks)
          for (int u = 0; u < 2; ++u)
            p.s_chunks[at_state(c, hd, key, v0 + col + u, d)] = state[nt].x[e + u];
      }
  };
#pragma unroll
  for (int nt = 0; nt < STATE_TILES; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int key = key0 + mma::acc_row(e), col = v0 + scol0 + nt * 8 + mma::acc_col(e);
      state[nt].x[e] = p.s0 && state_warp ? p.s0[at_state(n_seq, hd, key, col, d)] : 0.0f;
    }
  // o = (q~ . e^{g_cum}) h + A V (or A v_new) on the warp's rows and columns: the state term,
  // then the scores' term with the update's right factor and the store
  const auto output_state_term = [&](mma::Acc(&acc)[O_TILES], const X &x,
                                     const In(*h)[TC_BV + PAD]) {
    rows_times<true>(acc, &x.qd[0][0], X::LK, row0, &h[0][0], X::LV, ocol0, K);
    if (p.row_up) // q h . scale e^{g_cum}
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float f = d.scale * x.row_up[row0 + mma::acc_row(e)];
#pragma unroll
        for (int nt = 0; nt < O_TILES; ++nt)
          acc[nt].x[e] *= f;
      }
  };
  const auto output_scores_term = [&](mma::Acc(&acc)[O_TILES], const X &x, const In *right,
                                      ChunkRows rows) {
#ifdef RULEPROOF_PLANTED_BUG // gpu_check_planted only: a deliberate bug, the delta rules' output
                             // takes u for v_new in its scores' term
    rows_times<true>(acc, &x.a[0][0], X::LC, row0, p.w ? &x.right[0][0] : right, X::LV, ocol0,
                     row0 + SUB);
#else
    rows_times<true>(acc, &x.a[0][0], X::LC, row0, right, X::LV, ocol0, row0 + SUB);
#endif
    store_rows(o, acc, row0, v0 + ocol0, rows.n, static_cast<long>(rows.bos) * d.H * d.V + hd * d.V,
               static_cast<long>(d.H) * d.V, [](int, int, float x) { return x; });
  };
  // the state gradient's uses (TcStatePass::dk_s; the eight more warps, each rows [row0, + 16) of
  // the chunk and keys [kcol0, + K / 2)): dk_s = v_new dh^T over the block's 64 values, added
  // into dk_s (the blocks of a sequence and head add a half each), and this block's sum(h . dh)
  const auto state_gradient_uses = [&](int step, int c, ChunkRows rows,
                                       const In(*dh)[TC_BV + PAD]) {
    if constexpr (DH_USES) {
      constexpr int KEY_TILES_HALF = K / 2 / 8;
      const int side = owarp / 4, kcol0 = K / 2 * side, lane = threadIdx.x % 32;
      const int uses_tid = threadIdx.x - STATE_THREADS;
      // sum(h . dh) over the block's keys and values, 8 of each a load: h's loads first, so that
      // they are under way while v_new dh^T is made
      constexpr int H_LOADS = K * (TC_BV / 8) / OUTPUT_THREADS;
      static_assert(H_LOADS * OUTPUT_THREADS == K * (TC_BV / 8), "every thread loads as many");
      const In *h_chunk = static_cast<const In *>(p.h_in) + at_state(c, hd, 0, v0, d);
      alignas(16) In h8[H_LOADS][8];
#pragma unroll
      for (int l = 0; l < H_LOADS; ++l) {
        const int e = uses_tid + l * OUTPUT_THREADS, key = e / (TC_BV / 8);
        *reinterpret_cast<uint4 *>(h8[l]) = *reinterpret_cast<const uint4 *>(
            h_chunk + static_cast<long>(key) * d.V + (e % (TC_BV / 8)) * 8);
      }
      mma::Acc acc[KEY_TILES_HALF];
      rows_times_transposed(acc, &s.uses.v_new[step % 2][0][0], TC_BV, row0, &dh[0][0], TC_BV + PAD,
                            kcol0, TC_BV);
      float part = 0;
#pragma unroll
      for (int l = 0; l < H_LOADS; ++l) {
        const int e = uses_tid + l * OUTPUT_THREADS, key = e / (TC_BV / 8);
        part = plus_products8(part, h8[l], &dh[key][(e % (TC_BV / 8)) * 8]);
      }
      if (step + 2 < chunks) // dh's copy is read: the state warps may write it two steps on
        mma::barrier_arrive(EMPTY + step % 2, STATE_THREADS + OUTPUT_THREADS);
      part = warp_sum(part);
      if (lane == 0)
        s.uses.h_dh[owarp] = part;
      mma::barrier_sync(USES_BARRIER, OUTPUT_THREADS); // every warp's part is in
      if (uses_tid == 0) {
        float sum = 0;
        for (int w = 0; w < OUTPUT_THREADS / 32; ++w)
          sum += s.uses.h_dh[w];
        p.h_dh[(static_cast<long>(c) * d.H + hd) * gridDim.z + blockIdx.z] = sum;
      }
      const long row_at = static_cast<long>(rows.bos) * d.H + hd;
#pragma unroll
      for (int nt = 0; nt < KEY_TILES_HALF; ++nt)
#pragma unroll
        for (int e = 0; e < 4; e += 2) { // the two values of a row in one atomic add
          const int i = row0 + mma::acc_row(e), col = kcol0 + nt * 8 + mma::acc_col(e);
          if (i < rows.n)
            atomicAdd(reinterpret_cast<float2 *>(p.dk_s +
                                                 (row_at + static_cast<long>(i) * d.H) * K + col),
                      make_float2(acc[nt].x[e], acc[nt].x[e + 1]));
        }
    }
  };
  if constexpr (DH_USES)
    if (!state_warp) { // one of the state gradient's uses' warps: their own steps, in which they
                       // copy the forward's v_new and wait for dh's copy at FULL
      const int uses_tid = threadIdx.x - STATE_THREADS;
      const auto copy_v_new = [&](int step) {
        const long row_at = static_cast<long>(rows_of(step).bos) * d.H + hd;
        copy_tile_async<C, TC_BV, OUTPUT_THREADS>(
            &s.uses.v_new[step % 2][0][0], TC_BV,
            static_cast<const In *>(p.v_new_in) + row_at * d.V + v0, static_cast<long>(d.H) * d.V,
            rows_of(step).n, uses_tid);
        mma::commit_copies();
      };
      if (chunks > 0)
        copy_v_new(0);
      for (int step = 0; step < chunks; ++step) {
        // the next chunk's v_new takes the place that step - 1 read: every uses' warp is past
        // its USES_BARRIER there
        if (step + 1 < chunks) {
          copy_v_new(step + 1);
          mma::wait_copies_but_last();
        } else {
          mma::wait_copies();
        }
        mma::barrier_sync(USES_BARRIER, OUTPUT_THREADS); // the chunk's v_new is in
        mma::barrier_sync(FULL + step % 2, STATE_THREADS + OUTPUT_THREADS); // and dh's copy
        state_gradient_uses(step, chunk(step), rows_of(step), s.h[step % 2]);
      }
      return;
    }
  if (chunks > 0)
    copy(s.tiles[0], 0);

  for (int step = 0; step < chunks; ++step) {
    const int c = chunk(step);
    const ChunkRows rows = rows_of(step);
    X &x = s.tiles[step % 2];
    const In(*h)[TC_BV + PAD] = s.h[step % 2];
    if (state_warp) {
      if (DH_USES && step >= 2) // the uses' warps have read this copy of dh, two steps back
        mma::barrier_sync(EMPTY + step % 2, STATE_THREADS + OUTPUT_THREADS);
      at_chunk(c, step % 2);
      if (DH_USES)
        mma::barrier_arrive(FULL + step % 2, STATE_THREADS + OUTPUT_THREADS);
    }
    mma::wait_copies();
    // chunk c's tiles and state are in; every warp is done with the chunk before (with the state
    // gradient's uses: every state warp)
    if (DH_USES)
      mma::barrier_sync(STATE_BARRIER, STATE_THREADS);
    else
      __syncthreads();
    if (step + 1 < chunks)
      copy(s.tiles[(step + 1) % 2], step + 1);
    if (!state_warp) { // an output warp: the state term while v_new is made, then the rest
      mma::Acc acc[O_TILES];
      output_state_term(acc, x, h);
      if (p.w || p.row_up) // v_new is in (with row factors alone: the same meeting)
        mma::barrier_sync(V_NEW_BARRIER, blockDim.x);
      output_scores_term(acc, x, p.w ? &s.v_new[0][0] : &x.right[0][0], rows);
      continue;
    }
    if (s_chunks16) // the state at the chunk's start in the input type, 16 bytes a store
      for (int e = threadIdx.x; e < K * (TC_BV / 8); e += STATE_THREADS) {
        const int key = e / (TC_BV / 8), col = (e % (TC_BV / 8)) * 8;
        *reinterpret_cast<uint4 *>(s_chunks16 + at_state(c, hd, key, v0 + col, d)) =
            *reinterpret_cast<const uint4 *>(&h[key][col]);
      }

    const In *right = &x.right[0][0]; // the update's right factor: v, dO, or v_new
    if (p.w) { // on the warp's rows and columns, rounded to the input type: forwards, v_new =
               // u - w h; backwards, dv2 = A^T dO + kd dh, kept negated for the update
      mma::Acc acc[O_TILES];
      if constexpr (ROWS_BACK) { // with row factors: (k dh) . e^{gl - g_cum} in fp32, + A^T dO
        rows_times<true>(acc, &x.qd[0][0], X::LK, row0, &h[0][0], X::LV, ocol0, K);
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const float f = x.row_to_end[row0 + mma::acc_row(e)];
#pragma unroll
          for (int nt = 0; nt < O_TILES; ++nt)
            acc[nt].x[e] *= f;
        }
        transposed_times_rows<true>(acc, &x.a[0][0], X::LC, row0, &x.right[0][0], X::LV, ocol0,
                                    row0, C);
      } else if (p.reverse) {
        transposed_times_rows<true>(acc, &x.a[0][0], X::LC, row0, &x.right[0][0], X::LV, ocol0,
                                    row0, C);
        rows_times<true>(acc, &x.qd[0][0], X::LK, row0, &h[0][0], X::LV, ocol0, K);
      } else {
        rows_times<true>(acc, &x.w[0][0], X::LK, row0, &h[0][0], X::LV, ocol0, K);
      }
      const auto new_value = [&](int i, int col, float y) {
        return p.reverse ? y : val(x.right[i][col]) - y;
      };
#pragma unroll
      for (int nt = 0; nt < O_TILES; ++nt)
#pragma unroll
        for (int e = 0; e < 4; e += 2) { // the two values of a row at once (col is even)
          const int i = row0 + mma::acc_row(e), col = ocol0 + nt * 8 + mma::acc_col(e);
          float y[2];
          In x_new[2], kept[2], ended[2];
#pragma unroll
          for (int u = 0; u < 2; ++u) {
            y[u] = new_value(i, col + u, acc[nt].x[e + u]);
            x_new[u] = to<In>(y[u]);
            kept[u] = p.reverse ? to<In>(-val(x_new[u])) : x_new[u];
            if constexpr (ROWS_BACK) // dO . scale e^{g_cum}, rounded once
              ended[u] = to<In>(d.scale * x.row_up[i] * val(x.right[i][col + u]));
            else if (p.row_up) // v_new . e^{gl - g_cum}, rounded once
              ended[u] = to<In>(x.row_to_end[i] * y[u]);
            if (p.v_new && i < rows.n)
              p.v_new[at_v(rows.bos + i, hd, v0 + col + u, d)] = val(x_new[u]);
          }
          *reinterpret_cast<std::uint32_t *>(&s.v_new[i][col]) = mma::pack(kept[0], kept[1]);
          if (p.row_up)
            *reinterpret_cast<std::uint32_t *>(&s.v_end[i][col]) = mma::pack(ended[0], ended[1]);
        }
      if (p.v_new16) // (new_value reads the tile's columns: v0 goes into the pointer)
        store_rows(static_cast<In *>(p.v_new16) + v0, acc, row0, ocol0, rows.n,
                   static_cast<long>(rows.bos) * d.H * d.V + hd * d.V, static_cast<long>(d.H) * d.V,
                   new_value);
      if (output_warps && !DH_USES) // the output warps may read v_new
        mma::barrier_arrive(V_NEW_BARRIER, blockDim.x);
      mma::barrier_sync(STATE_BARRIER, STATE_THREADS); // every row of v_new is in
      right = &s.v_new[0][0];
    } else if (p.row_up) { // the update's right factor v . e^{gl - g_cum}, rounded once
      for (int e = threadIdx.x; e < C * (TC_BV / 8); e += STATE_THREADS) { // 8 values a store
        const int i = e / (TC_BV / 8), col = 8 * (e % (TC_BV / 8));
        const float f = x.row_to_end[i];
        alignas(16) In v[8];
        *reinterpret_cast<uint4 *>(v) = *reinterpret_cast<const uint4 *>(&x.right[i][col]);
        uint4 ended;
        ended.x = mma::pack_rounded<In>(f * val(v[0]), f * val(v[1]));
        ended.y = mma::pack_rounded<In>(f * val(v[2]), f * val(v[3]));
        ended.z = mma::pack_rounded<In>(f * val(v[4]), f * val(v[5]));
        ended.w = mma::pack_rounded<In>(f * val(v[6]), f * val(v[7]));
        *reinterpret_cast<uint4 *>(&s.v_end[i][col]) = ended;
      }
      if (output_warps) { // the barriers of the delta rules' steps, though v_end is the state's
        mma::barrier_arrive(V_NEW_BARRIER, blockDim.x);
        mma::barrier_sync(STATE_BARRIER, STATE_THREADS); // every row of v_end is in
      }
    }

    if (o && !output_warps) {
      mma::Acc acc[O_TILES];
      output_state_term(acc, x, h);
      output_scores_term(acc, x, right, rows);
    }

    if (p.row_up && !p.w && !output_warps) {
      mma::barrier_sync(STATE_BARRIER, STATE_THREADS); // every row of v_end is in
    }
    // -- s' = Diag(e^{gl}) s + left^T right on the warp's keys and columns
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float decay_e = x.decay[SCALAR ? 0 : key0 + mma::acc_row(e)];
#pragma unroll
      for (int nt = 0; nt < STATE_TILES; ++nt)
        state[nt].x[e] *= decay_e;
    }
    if (p.w && p.reverse) { // dh' = Diag(e^{gl}) dh + qd^T dO - w^T dv2 (with row factors:
                            // q^T (dO . scale e^{g_cum}))
      transposed_times_rows<true>(state, &x.left[0][0], X::LK, key0,
                                  ROWS_BACK ? &s.v_end[0][0] : &x.right[0][0], X::LV, scol0, 0, C);
      transposed_times_rows<true>(state, &x.w[0][0], X::LK, key0, right, X::LV, scol0, 0, C);
    } else { // (with row factors: k^T (v_new . e^{gl - g_cum}))
      transposed_times_rows<true>(state, &x.left[0][0], X::LK, key0,
                                  p.row_up ? &s.v_end[0][0] : right, X::LV, scol0, 0, C);
      if (p.left2) // dplr: + kd^T v
        transposed_times_rows<true>(state, &x.qd[0][0], X::LK, key0, &x.a[0][0], X::LC, scol0, 0,
                                    C);
    }
  }
  if (p.s_end && state_warp)
#pragma unroll
    for (int nt = 0; nt < STATE_TILES; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int key = key0 + mma::acc_row(e), col = v0 + scol0 + nt * 8 + mma::acc_col(e);
        p.s_end[at_state(n_seq, hd, key, col, d)] = state[nt].x[e];
      }
}

template <class In, int K, bool SCALAR>
void launch_scores(const void *q, const void *k, const float *g, const TcScratch &scratch, float *A,
                   float *g_cum, const DeviceChunkTable &t, const ChunkDims &d) {
  const int bytes = static_cast<int>(sizeof(ScoreShared<In, K, SCALAR>));
  auto *kernel = chunk_gla_scores_tc_kernel<In, K, SCALAR>;
  allow_shared_memory(kernel, bytes, "chunk_gla_scores_tc_kernel");
  kernel<<<dim3(t.NC, d.H), SCORE_THREADS, bytes>>>(
      in<In>(q), in<In>(k), g, out<In>(scratch.A16), out<In>(scratch.qd), out<In>(scratch.kd),
      scratch.decay, scratch.row_up, scratch.row_to_end, A, g_cum, t, d);
}

/// Whether a pass with an output takes output warps: the default since they hold every check and
/// take 4 to 10% off simple_gla's and gated_delta_rule's forwards (reports/gpu/tensor_core.md,
/// "Output warps"); RULEPROOF_STATE_OUTPUT=own in the environment keeps the kernel without them,
/// whose state warps compute the output too.
bool with_output_warps() {
  static const bool warps = [] {
    const char *kernel = std::getenv("RULEPROOF_STATE_OUTPUT");
    return !(kernel && std::string_view(kernel) == "own");
  }();
  return warps;
}

template <class In, int K, bool SCALAR>
void launch_state(const TcStatePass &p, const DeviceChunkTable &t, const ChunkDims &d) {
  constexpr int G = SCALAR ? 1 : K;
  const dim3 grid(t.N, d.H, d.V / TC_BV);
  if constexpr (SCALAR)
    if (p.dk_s) { // the state gradient's uses: gated_delta_rule's backwards pass
      if (!(p.w && p.reverse && p.row_up && p.v_new_in && p.h_in && p.h_dh))
        throw std::invalid_argument("chunk_gla_state_tc: dk_s takes gated_delta_rule's backwards "
                                    "pass with row factors, v_new_in, h_in and h_dh");
      static_assert(sizeof(StateWithUsesShared<In, K, G>) <= 227 * 1024,
                    "the state gradient's uses' places fit beside the pass's");
      const int bytes = static_cast<int>(sizeof(StateWithUsesShared<In, K, G>));
      auto *kernel = chunk_gla_state_tc_kernel<In, K, SCALAR, true, true>;
      allow_shared_memory(kernel, bytes, "chunk_gla_state_tc_kernel (the state gradient's uses)");
      kernel<<<grid, STATE_THREADS + OUTPUT_THREADS, bytes>>>(p, t, d);
      return;
    }
  const int bytes = static_cast<int>(sizeof(StateShared<In, K, G>));
  auto *kernel = chunk_gla_state_tc_kernel<In, K, SCALAR>;
  if constexpr (SCALAR)
    if (p.w && p.reverse && p.row_up)
      kernel = chunk_gla_state_tc_kernel<In, K, SCALAR, true>;
  allow_shared_memory(kernel, bytes, "chunk_gla_state_tc_kernel");
  const int threads = STATE_THREADS + (p.o && with_output_warps() ? OUTPUT_THREADS : 0);
  kernel<<<grid, threads, bytes>>>(p, t, d);
}

} // namespace

void launch_chunk_gla_scores_tc(const void *q, const void *k, const float *g,
                                const TcScratch &scratch, float *A, float *g_cum,
                                const DeviceChunkTable &t, const ChunkDims &d) {
  if (t.NC == 0)
    return;
  with_input_type(d, [&](auto x) {
    using In = decltype(x);
    if (d.G == 1)
      d.K == 64 ? launch_scores<In, 64, true>(q, k, g, scratch, A, g_cum, t, d)
                : launch_scores<In, 128, true>(q, k, g, scratch, A, g_cum, t, d);
    else
      d.K == 64 ? launch_scores<In, 64, false>(q, k, g, scratch, A, g_cum, t, d)
                : launch_scores<In, 128, false>(q, k, g, scratch, A, g_cum, t, d);
  });
  check("chunk_gla_scores_tc_kernel");
}

void launch_chunk_gla_state_tc(const TcStatePass &p, const DeviceChunkTable &t,
                               const ChunkDims &d) {
  if (t.N == 0)
    return;
  with_input_type(d, [&](auto x) {
    using In = decltype(x);
    if (d.G == 1)
      d.K == 64 ? launch_state<In, 64, true>(p, t, d) : launch_state<In, 128, true>(p, t, d);
    else
      d.K == 64 ? launch_state<In, 64, false>(p, t, d) : launch_state<In, 128, false>(p, t, d);
  });
  check("chunk_gla_state_tc_kernel");
}

} // namespace ruleproof::gpu::detail
