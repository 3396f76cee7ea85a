// ruleproof: the launchers of the delta-rule chunkwise kernels (gpu/chunk_delta.cu:
// gated_delta_rule with a scalar gate, kda with a per-key gate), as the host API
// (gpu/chunk_delta.cpp) calls them. Layouts as in chunk_launch.hpp, and: beta, dbeta
// [B*T, H] fp32; w, dw [B*T, H, K] fp32; u, v_new, dv2 [B*T, H, V] fp32; A0, A [B*T, H, C]
// fp32. Plain C++17 and raw device pointers (included by nvcc).
#pragma once

#include "chunk_launch.hpp"

namespace ruleproof::gpu {
class DeviceArray; // gpu/buffer.hpp
}

namespace ruleproof::gpu::detail {

/// chunk_scaled_dot_kkt, solve_tril, recompute_w_u, one launch: A0 (strictly lower
/// Diag(beta) (k k^T decayed)), A = (I + A0)^-1 (unit lower), w = A Diag(beta) (k . e^g_cum),
/// u = A Diag(beta) v.
void launch_chunk_wy_fwd(const void *k, const void *v, const float *beta, const float *g_cum,
                         float *A0, float *A, float *w, float *u, const DeviceChunkTable &t,
                         const ChunkDims &d);
/// chunk_fwd_h: h[c] the state at the start of chunk c, v_new = u - w h, ht (optional) the
/// final state; h0 optional (zeros).
void launch_chunk_delta_fwd_h(const void *k, const float *w, const float *u, const float *g_cum,
                              const float *h0, float *h, float *v_new, float *ht,
                              const DeviceChunkTable &t, const ChunkDims &d);
/// chunk_fwd_o with v_new as the values.
void launch_chunk_delta_fwd_o(const void *q, const void *k, const float *v_new, const float *g_cum,
                              const float *h, void *o, const DeviceChunkTable &t,
                              const ChunkDims &d);
/// chunk_bwd_dv_local: dv2 = A_qk^T dO, the gradient of v_new through the output alone.
void launch_chunk_bwd_dv_local(const void *q, const void *k, const float *g_cum, const void *d_o,
                               float *dv2, const DeviceChunkTable &t, const ChunkDims &d);
/// chunk_bwd_dhu: dh[c] the gradient of the state after chunk c (dht optional, zero when
/// absent), dv2 completed in place to the whole gradient of v_new, dh0 (optional) the
/// gradient of the initial state.
void launch_chunk_bwd_dhu(const void *q, const void *k, const float *w, const float *g_cum,
                          const void *d_o, const float *dht, float *dv2, float *dh, float *dh0,
                          const DeviceChunkTable &t, const ChunkDims &d);
/// chunk_bwd_dqkwg: dq (input type), dk through the output and the state (fp32), dw, and
/// dG, the gradient of g_cum through these paths [B*T, H, K] fp32.
void launch_chunk_bwd_dqkwg(const void *q, const void *k, const float *v_new, const float *g_cum,
                            const float *h, const void *d_o, const float *dh, const float *dv2,
                            void *dq, float *dk_qkw, float *dw, float *dG,
                            const DeviceChunkTable &t, const ChunkDims &d);
/// prepare_wy_repr_bwd: dk = dk_qkw + the WY representation's part (input type), dv, dbeta,
/// and the WY part of the gradient of g_cum added to dG in place.
void launch_chunk_wy_bwd(const void *k, const void *v, const float *beta, const float *g_cum,
                         const float *A, const float *dw, const float *dv2, const float *dk_qkw,
                         void *dk, void *dv, float *dbeta, float *dG, const DeviceChunkTable &t,
                         const ChunkDims &d);
/// chunk_local_cumsum reverse: dg = the suffix sum of dG inside each chunk (the adjoint of
/// chunk_local_cumsum), summed over keys when G == 1. dG is overwritten.
void launch_chunk_local_cumsum_reverse(float *dG, float *dg, const DeviceChunkTable &t,
                                       const ChunkDims &d);

/// What the tensor-core path's WY kernel passes to the sequential kernel, in the input type: the
/// scores Aqk [B*T, H, C], qd = q~ . e^{g_cum} and kd = k . e^{gl - g_cum} (q's shape), w [B*T, H,
/// K] and u [B*T, H, V]; and the chunks' decays e^{gl} [NC, H], fp32.
struct DeltaTcScratch {
  /// Aqk and qd null: the states alone (kda's per-key gate only; the factored Aqk is skipped)
  void *Aqk = nullptr, *qd = nullptr, *kd = nullptr, *w = nullptr, *u = nullptr;
  float *decay = nullptr;
  void *A = nullptr; ///< A = (I + A0)^-1 [B*T, H, C] in the input type, optional (the backward's)
  /// [B*T, H] fp32, optional (a scalar gate): each row's e^{g_cum} and e^{gl - g_cum}, for
  /// TcStatePass::row_up and row_to_end (then qd and kd may be null: not stored)
  float *row_up = nullptr, *row_to_end = nullptr;
};
/// The stages the WY kernel writes when asked (each optional, fp32): g_cum, A0, A (as the input
/// type holds it), w and u (likewise).
struct DeltaTcStages {
  float *g_cum = nullptr, *A0 = nullptr, *A = nullptr, *w = nullptr, *u = nullptr;
};
/// The tensor-core WY kernel of gated_delta_rule (gpu/chunk_delta_tc.cu), every chunk at once:
/// g_cum, Aqk, A0, A = (I + A0)^-1, w, u and the decayed factors; the sequential kernel
/// (launch_chunk_gla_state_tc with w) follows it.
void launch_chunk_delta_wy_tc(const void *q, const void *k, const void *v, const float *g,
                              const float *beta, const DeltaTcScratch &x, const DeltaTcStages &st,
                              const DeviceChunkTable &t, const ChunkDims &d);

/// The tensor-core backward's WY pass from the forward's A [B*T, H, C] (input type; DeltaSaved of
/// gpu/chunk_delta.hpp): qd, kd, the decays, w and u into x as launch_chunk_delta_wy_tc makes
/// them, bit for bit, and Aqk too where x.Aqk is not null (a forward that kept A alone:
/// gated_oja's); a scalar gate's row factors (x.row_up, x.row_to_end) in place of qd and kd (x.qd
/// and x.kd null; q then read for Aqk alone); x.A neither read nor written.
void launch_chunk_delta_wy_from_a_tc(const void *q, const void *k, const void *v, const float *g,
                                     const float *beta, const void *A, const DeltaTcScratch &x,
                                     const DeviceChunkTable &t, const ChunkDims &d);
/// Whether the current device runs the sm_90a kernels (launch_chunk_delta_fused_tc): compute
/// capability 9.0 exactly; false without CUDA.
bool runs_sm90a();
/// A = (I + A0)^-1 [B*T, H, C] in the input type of gated_delta_rule (a scalar gate, d.G == 1),
/// every chunk at once (gpu/chunk_delta_tc.cu): the WY kernel's A, bit for bit, for
/// launch_chunk_delta_fused_tc with a_given and launch_chunk_delta_fused_states_tc.
void launch_chunk_delta_a_tc(const void *k, const float *g, const float *beta, void *A,
                             const DeviceChunkTable &t, const ChunkDims &d);
/// What gated_delta_rule's forward in one kernel reads and writes (gpu/chunk_delta_fused_tc.cu): q,
/// k [B*T, H, K] and v [B*T, H, V] in the input type, g and beta [B*T, H] fp32, h0 [N, H, K, V]
/// fp32 (optional); o [B*T, H, V] in the input type, ht [N, H, K, V] fp32 (optional), and, for the
/// backward (DeltaSaved, optional), A and Aqk [B*T, H, C] in the input type.
struct DeltaFusedPass {
  const void *q = nullptr, *k = nullptr, *v = nullptr;
  const float *g = nullptr, *beta = nullptr, *s0 = nullptr;
  void *o = nullptr, *A = nullptr, *Aqk = nullptr;
  float *s_end = nullptr;
  /// launch_chunk_delta_fused_states_tc's (o null): the states h at each chunk's start [NC, H, K,
  /// V], v_new [B*T, H, V] and w [B*T, H, K] in the input type; each row's e^{g_cum} and
  /// e^{gl - g_cum} [B*T, H] and each chunk's e^{gl} [NC, H], fp32
  void *h16 = nullptr, *v_new16 = nullptr, *w = nullptr;
  float *row_up = nullptr, *row_to_end = nullptr, *decay = nullptr;
  /// a diagnostic, optional: [fused_timeline_chunks, fused_timeline_events] fp32, block (0, 0,
  /// 0)'s SM cycles since its start at the end of each of its phases (FusedEvent) in each of its
  /// first chunks; NaN where not reached
  float *timeline = nullptr;
  /// the keys' and A's tiles copied by the Tensor Memory Accelerator (gpu/detail/tma.cuh), a few
  /// threads' instructions (tma_thread), in place of a warpgroup's cp.async
  /// (RULEPROOF_FUSED_COPIES=tma, the default)
  bool tma = false;
  /// with tma: the first WY warpgroup's first thread issues every box of a chunk's keys and A
  /// (RULEPROOF_FUSED_TMA=thread), not the first lane of each of its four warps a quarter of them
  /// (`warps`, the default)
  bool tma_thread = false;
  long rows = 0; ///< the rows of q, k, v and A (B * T): the tensor maps' extent, with tma
};
/// The phases whose ends DeltaFusedPass::timeline records, a chunk's row of the timeline: the WY
/// warpgroups' for that chunk (made in the step before), the state's and the output's in its step.
enum FusedEvent {
  WY_START,      ///< the WY warpgroups begin the chunk (its copies issued)
  WY_KK,         ///< the gates and beta v are in (the second WY warpgroup)
  WY_A0,         ///< A0 (made from k k^T's accumulators by the first) and beta v are in
  WY_SOLVE,      ///< the solve is done
  WY_FACTORS,    ///< A and beta k e^{g_cum} are in the input type
  WY_W,          ///< w is in (the first WY warpgroup)
  WY_U,          ///< u is in (the second)
  WY_STEP_END,   ///< the WY warpgroups pass the step's barrier
  STATE_WY_DONE, ///< the state warpgroup has the chunk's w and u
  STATE_V_NEW,   ///< v_new and v_end are in
  STATE_UPDATE,  ///< h's update is done
  STATE_COPY,    ///< h's copy for the next chunk is in
  STATE_END,     ///< the state warpgroup passes the step's barrier
  OUTPUT_SCORES, ///< q h and Aqk are in
  OUTPUT_V_NEW,  ///< the output warpgroup has v_new
  OUTPUT_STORED, ///< the output is stored
  WY_ARRIVED,    ///< the WY warpgroups have arrived at wy_done with the chunk's w and u
  STATE_ISSUED,  ///< the state warpgroup has issued w h
  STATE_WH,      ///< its w h is done (before v_new's stores)
  OUTPUT_ISSUED, ///< the output warpgroup has issued q h and q k^T
  OUTPUT_QH,     ///< its q h is done
  WY_WAITED,     ///< the first WY warpgroup's copies waited for, before the step's barrier
  WY_WAITED_U,   ///< the second's likewise
};
constexpr int fused_timeline_chunks = 64, fused_timeline_events = WY_WAITED_U + 1;
/// FusedEvent's names, in its order (the timeline file's header)
constexpr const char *fused_event_names[fused_timeline_events] = {
    "wy_start",  "wy_kk",         "wy_a0",         "wy_solve",      "wy_factors",   "wy_w",
    "wy_u",      "wy_step_end",   "state_wy_done", "state_v_new",   "state_update", "state_copy",
    "state_end", "output_scores", "output_v_new",  "output_stored", "wy_arrived",   "state_issued",
    "state_wh",  "output_issued", "output_qh",     "wy_waited",     "wy_waited_u"};

/// gated_delta_rule's tensor-core forward in one kernel on warpgroup MMA (sm_90a): the WY
/// representation, the state, v_new and the output of every chunk of a sequence in order, the
/// same intermediates rounded to the input type as launch_chunk_delta_wy_tc then
/// launch_chunk_gla_state_tc with row factors. K, V of 64 or 128. With a_given, p.A is read, not
/// written: A of every chunk as launch_chunk_delta_a_tc makes it, and the kernel makes no A0 and
/// no solve. Where p.Aqk is given, the output warpgroup stores Aqk from its own sums, for a
/// backward.
void launch_chunk_delta_fused_tc(const DeltaFusedPass &p, const DeviceChunkTable &t,
                                 const ChunkDims &d, bool a_given = false);
/// The backward's forward stages of gated_delta_rule in that kernel, given p.A (every chunk's, as
/// launch_chunk_delta_a_tc makes it): p.h16, p.v_new16, p.w, p.row_up, p.row_to_end and p.decay,
/// what launch_chunk_delta_wy_from_a_tc then launch_chunk_gla_state_tc store for
/// launch_state_gradients_tc and launch_chunk_delta_bwd_tc, with the fused forward's sums; no
/// output (p.o, p.s_end and p.timeline unused). Where p.Aqk is given (a backward that solves
/// again), Aqk too, as launch_chunk_delta_fused_tc stores it, bit for bit.
void launch_chunk_delta_fused_states_tc(const DeltaFusedPass &p, const DeviceChunkTable &t,
                                        const ChunkDims &d);
/// simple_gla's tensor-core forward (a scalar gate, d.G == 1) in that kernel's plain form: no WY
/// representation, v_new = v, the state and the output of every chunk of a sequence in order, the
/// same intermediates rounded to the input type as launch_chunk_gla_scores_tc then
/// launch_chunk_gla_state_tc with row factors (the scores, v . e^{gl - g_cum}, the state's copy at
/// a chunk's start). Reads p.q, p.k, p.v, p.g and p.s0 (optional); writes p.o and p.s_end
/// (optional); p.beta, p.A and p.Aqk unused.
void launch_chunk_gla_fused_tc(const DeltaFusedPass &p, const DeviceChunkTable &t,
                               const ChunkDims &d);
/// gated_delta_rule's forward with the state held in registers (gpu/chunk_delta_held_tc.cu,
/// sm_90a): every product of a chunk's step takes its left factor from registers, and v_new = A x
/// with x = Diag(beta) (v - e^{g_cum} . (k h)), no WY factor formed. Reads p.q, p.k, p.v, p.g,
/// p.beta, p.A (launch_chunk_delta_a_tc's) and p.s0 (optional); writes p.o, p.s_end and p.Aqk
/// (each optional but o); p.tma and the timeline unused.
void launch_chunk_delta_held_tc(const DeltaFusedPass &p, const DeviceChunkTable &t,
                                const ChunkDims &d);
/// simple_gla's forward in that kernel's plain form: v_new = v, no A and no beta (p.beta, p.A
/// and p.Aqk unused).
void launch_chunk_gla_held_tc(const DeltaFusedPass &p, const DeviceChunkTable &t,
                              const ChunkDims &d);
/// The fused kernel's pass with a call's inputs (gpu/chunk_delta.cpp; beta null for the plain
/// form), its copies' switches from the environment (DeltaFusedPass::tma from
/// RULEPROOF_FUSED_COPIES: `tma`, the default, or `threads`; tma_thread from RULEPROOF_FUSED_TMA:
/// `warps`, the default, or `thread`) and, where RULEPROOF_FUSED_TIMELINE=FILE is set (a
/// diagnostic), `timeline` made and p.timeline set; the outputs are the caller's to set.
DeltaFusedPass fused_pass(const DeviceArray *q, const DeviceArray *k, const DeviceArray *v,
                          const DeviceArray *g, const DeviceArray *beta, const DeviceArray *h0,
                          DeviceArray &timeline);
/// After the kernel, where p has a timeline: it appended to RULEPROOF_FUSED_TIMELINE's FILE, a
/// line of the FusedEvent names, then a line a chunk reached (waits for the kernel).
void append_fused_timeline(const DeltaFusedPass &p, const DeviceArray &timeline);

/// What the tensor-core backward of gated_delta_rule and kda reads besides the inputs, all in the
/// input type: A [B*T, H, C] (launch_chunk_delta_wy_tc's), the states h at each chunk's start and
/// dh, their gradients after it [NC, H, K, V], v_new and dv2 [B*T, H, V] (the sequential kernel's,
/// forwards and backwards).
struct DeltaTcBackward {
  const void *A = nullptr, *h = nullptr, *dh = nullptr, *v_new = nullptr, *dv2 = nullptr;
  /// gated_delta_rule, in place of dh (null): its two uses, made by the sequential kernel
  /// backwards (TcStatePass::dk_s): v_new dh^T [B*T, H, K] and each block's sum(h . dh) [NC, H,
  /// V / 64], fp32
  const float *dk_s = nullptr, *h_dh = nullptr;
};
/// chunk_bwd_dqkwg and chunk_wy_bwd of gated_delta_rule (d.G == 1) and kda (d.G == K) on tensor
/// cores (gpu/chunk_delta_bwd_tc.cu), every chunk at once: dq, dk, dv (input type), dbeta and dg
/// (fp32; dg the suffix sum of the gate's gradient inside each chunk, per key for kda).
void launch_chunk_delta_bwd_tc(const void *q, const void *k, const void *v, const float *g,
                               const float *beta, const void *d_o, const DeltaTcBackward &x,
                               void *dq, void *dk, void *dv, float *dbeta, float *dg,
                               const DeviceChunkTable &t, const ChunkDims &d);

} // namespace ruleproof::gpu::detail
