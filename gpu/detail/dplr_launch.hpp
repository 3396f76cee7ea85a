// ruleproof: the launchers of the dplr chunkwise kernels (gpu/chunk_dplr.cu: dplr in
// flash-linear-attention's parameterisation), as the host API (gpu/chunk_dplr.cpp) calls them.
// Layouts as in chunk_launch.hpp, and: a, b, da, db [B*T, H, K] (the input type); w, dw
// [B*T, H, K] fp32; c, v2, dv2, Et_dv2 [B*T, H, V] fp32; the scores A_qk, A_qa, A_ba, A_bk, E,
// dA_ba [B*T, H, C] fp32. Its backward also runs two delta-rule launchers (delta_launch.hpp).
// Plain C++17 and raw device pointers (included by nvcc).
//
// dplr's kernels compute the engine's form of reference/dplr/chunk.hpp, S_t = (A_t - a_t d_t^T)
// S_{t-1} + k_t v_t^T; they read flash-linear-attention's a, b (S_t = A_t S_{t-1} + b_t (a_t^T
// S_{t-1}) + k_t v_t^T) as the engine's a = b and d = -a (exact: a sign).
#pragma once

#include "chunk_launch.hpp"

namespace ruleproof::gpu::detail {

/// chunk_dplr_fwd_intra, solve_tril, recompute_w_c, one launch: the scores A_qk, A_qa (with
/// their diagonal), A_ba, A_bk (strictly lower), E = (I + A_ba)^-1, w = E (d . e^g_excl),
/// c = -E A_bk v.
void launch_chunk_dplr_fwd_wy(const void *q, const void *k, const void *v, const void *a,
                              const void *b, const float *g_cum, float *A_qk, float *A_qa,
                              float *A_ba, float *A_bk, float *E, float *w, float *c,
                              const DeviceChunkTable &t, const ChunkDims &d);
/// chunk_dplr_fwd_h: h[c] the state at the start of chunk c, v2 = c - w h, ht (optional) the
/// final state; h0 optional (zeros).
void launch_chunk_dplr_fwd_h(const void *k, const void *v, const void *b, const float *w,
                             const float *c, const float *g_cum, const float *h0, float *h,
                             float *v2, float *ht, const DeviceChunkTable &t, const ChunkDims &d);
/// chunk_dplr_fwd_o: o = (q~ . e^g_cum) h + A_qk v + A_qa v2.
void launch_chunk_dplr_fwd_o(const void *q, const void *v, const float *g_cum, const float *A_qk,
                             const float *A_qa, const float *h, const float *v2, void *o,
                             const DeviceChunkTable &t, const ChunkDims &d);
/// The WY part of the backward: dw = -dv2 h^T, Et_dv2 = E^T dv2, and dA_ba, the gradient of
/// A_ba through E (strictly lower; zero elsewhere on the chunk's rows).
void launch_chunk_dplr_bwd_wy(const void *a, const void *v, const float *g_cum, const float *A_bk,
                              const float *E, const float *h, const float *dv2, float *dw,
                              float *Et_dv2, float *dA_ba, const DeviceChunkTable &t,
                              const ChunkDims &d);
/// dq, dk, dv, and flash-linear-attention's da (= -dd), db (= the engine's da), the input type;
/// dG, the gradient of g_cum [B*T, H, K] fp32; d_dd scratch [B*T, H, K] fp32. ht: the final
/// state of each sequence (h_end of its last chunk).
void launch_chunk_dplr_bwd_dqk(const void *q, const void *k, const void *v, const void *a,
                               const void *b, const float *g_cum, const float *A_qk,
                               const float *A_bk, const float *E, const float *h, const float *ht,
                               const float *v2, const void *d_o, const float *dh, const float *dw,
                               const float *Et_dv2, const float *dA_ba, void *dq, void *dk,
                               void *dv, void *da, void *db, float *dG, float *d_dd,
                               const DeviceChunkTable &t, const ChunkDims &d);

/// What dplr's tensor-core WY kernel stores for the kernels after it, in the input type but for
/// the decays: the scores A_qk, A_qa [B*T, H, C]; qd = q~ . e^g_cum, kd = k . e^{gl - g_cum}, ad
/// = a . e^{gl - g_cum} (the engine's a, flash-linear-attention's b) and w [B*T, H, K]; c
/// [B*T, H, V]; decay = e^{gl} [NC, H, K] fp32; and for the backward (each optional): -E and A_bk
/// [B*T, H, C], bl = -d . e^gx [B*T, H, K] (flash-linear-attention's a . e^gx) and bv = A_bk v
/// [B*T, H, V].
struct DplrTcScratch {
  void *A_qk = nullptr, *A_qa = nullptr, *qd = nullptr, *kd = nullptr, *ad = nullptr;
  void *w = nullptr, *c = nullptr;
  float *decay = nullptr;
  void *mE = nullptr, *A_bk = nullptr, *bl = nullptr, *bv = nullptr;
};
/// The stages dplr's tensor-core WY kernel writes when asked (each optional, fp32, the layouts of
/// launch_chunk_dplr_fwd_wy's): g_cum, the four scores, E, w and c (E, w, c as the input type
/// holds them).
struct DplrTcStages {
  float *g_cum = nullptr, *A_qk = nullptr, *A_qa = nullptr, *A_ba = nullptr, *A_bk = nullptr;
  float *E = nullptr, *w = nullptr, *c = nullptr;
};
/// dplr's tensor-core WY kernel (gpu/chunk_dplr_tc.cu), every chunk at once, on the raw gate gk:
/// g_cum, the four scores, E = (I + A_ba)^-1, w, c and the decayed factors; the sequential kernel
/// (launch_chunk_gla_state_tc with w and the second term kd^T v) follows it.
void launch_chunk_dplr_wy_tc(const void *q, const void *k, const void *v, const void *a,
                             const void *b, const float *gk, const DplrTcScratch &x,
                             const DplrTcStages &st, const DeviceChunkTable &t, const ChunkDims &d);
/// dplr's tensor-core output (gpu/chunk_dplr_tc.cu): o = qd h + A_qk v + A_qa v2, from x's qd,
/// A_qk and A_qa, the state h at each chunk's start [NC, H, K, V] and v2 [B*T, H, V], all in the
/// input type.
void launch_chunk_dplr_fwd_o_tc(const void *v, const DplrTcScratch &x, const void *h,
                                const void *v2, void *o, const DeviceChunkTable &t,
                                const ChunkDims &d);

/// What dplr's tensor-core backward reads besides its inputs, all in the input type: the WY
/// kernel's A_qk, -E and A_bk [B*T, H, C], kd and bl [B*T, H, K], bv [B*T, H, V] (DplrTcScratch);
/// the sequential kernel's states h at each chunk's start and dh, their gradients after it [NC, H,
/// K, V], v2 and dv2 [B*T, H, V] (forwards and backwards).
struct DplrTcBackward {
  const void *A_qk = nullptr, *mE = nullptr, *A_bk = nullptr, *kd = nullptr, *bl = nullptr;
  const void *bv = nullptr, *h = nullptr, *dh = nullptr, *v2 = nullptr, *dv2 = nullptr;
};
/// What the first of dplr's two tensor-core backward kernels hands the second: the sums over the
/// values dO h^T, v dh^T, v2 dh^T and E^T dw [B*T, H, K] and rowsum(h . dh) [NC, H, K], fp32; the
/// gradients of the four scores [B*T, H, C] below their diagonals in the input type (A_bk's and
/// A_ba's with their rows moved up by one: row i holds row i + 1, so that they are inclusive like
/// the other two) and their diagonals [B*T, H] in fp32.
struct DplrTcTerms {
  float *dO_h = nullptr, *v_dh = nullptr, *v2_dh = nullptr, *Et_dw = nullptr, *h_dh = nullptr;
  void *dA_qk = nullptr, *dA_qa = nullptr, *dA_bk_up = nullptr, *dA_ba_up = nullptr;
  float *diag_qk = nullptr, *diag_qa = nullptr, *diag_bk_up = nullptr, *diag_ba_up = nullptr;
};
/// dplr's tensor-core backward, first kernel (gpu/chunk_dplr_tc.cu), every chunk at once: dv (the
/// input type) and the terms y.
void launch_chunk_dplr_bwd_wy_tc(const void *v, const void *d_o, const DplrTcBackward &x, void *dv,
                                 const DplrTcTerms &y, const DeviceChunkTable &t,
                                 const ChunkDims &d);
/// dplr's tensor-core backward, second kernel: dq, dk and flash-linear-attention's da, db (the
/// input type), and dgk [B*T, H, K] fp32 (the suffix sum of the gate's gradient inside each
/// chunk), from the inputs, the raw gate gk and the terms y.
void launch_chunk_dplr_bwd_dqk_tc(const void *q, const void *k, const void *a, const void *b,
                                  const float *gk, const DplrTcTerms &y, void *dq, void *dk,
                                  void *da, void *db, float *dgk, const DeviceChunkTable &t,
                                  const ChunkDims &d);

} // namespace ruleproof::gpu::detail
