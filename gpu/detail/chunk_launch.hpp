// ruleproof: what every chunkwise kernel launcher shares (gpu/chunk_gla.cu, gpu/chunk_delta.cu):
// the chunk size, the chunk table, the sizes of a call, and the stage every rule begins with,
// chunk_local_cumsum. Plain C++17 and raw device pointers: included by nvcc, so free of Eigen,
// Boost and C++20.
//
// Layouts (row r of the flattened [B*T] time axis; sequence n covers rows [bos, eos)):
//   q, k [B*T, H, K]; v, o, do [B*T, H, V] (bf16 or fp16);
//   g, g_cum, dg [B*T, H, G] with G = K (per-key gate) or 1 (scalar gate), fp32;
//   h0, ht, dht, dh0 [N, H, K, V] fp32; h, dh (per chunk) [NC, H, K, V] fp32;
//   scores such as A [B*T, H, C] fp32 (row r, column j of r's chunk; zero above the diagonal
//   and past the chunk's end).
#pragma once

namespace ruleproof::gpu {

/// The chunk size of every kernel (flash-linear-attention's BT).
constexpr int kernel_chunk_size = 64;

namespace detail {

/// The sequences and chunks of one call, in device memory (int32 arrays).
struct DeviceChunkTable {
  const int *seq_bos = nullptr;         ///< [N] first row of sequence n
  const int *seq_eos = nullptr;         ///< [N] one past its last row
  const int *seq_first_chunk = nullptr; ///< [N + 1] index of its first chunk; NC at the end
  const int *chunk_seq = nullptr;       ///< [NC] sequence of chunk c
  const int *chunk_bos = nullptr;       ///< [NC] first row of chunk c
  const int *chunk_n = nullptr;         ///< [NC] its rows (C but for a sequence's last chunk)
  int N = 0, NC = 0;
};

/// Sizes and options of one call.
struct ChunkDims {
  int H = 0, K = 0, V = 0;
  int G = 0; ///< gate columns: K (per-key gate) or 1 (scalar gate)
  float scale = 1;
  bool fp16 = false; ///< q, k, v, o, do, dq, dk, dv are fp16 (else bf16)
};

// Each launcher throws std::runtime_error naming the kernel when CUDA reports an error.
// Optional pointers (nullptr) are noted; every other pointer must be valid.

/// g_cum = chunk_local_cumsum(g): the sum of g from the chunk's first row to row r.
void launch_chunk_local_cumsum(const float *g, float *g_cum, const DeviceChunkTable &t,
                               const ChunkDims &d);

/// The value columns of a block of the tensor-core sequential kernel: it runs V / TC_BV blocks a
/// sequence and head.
constexpr int TC_BV = 64;

/// \brief One run of the tensor-core sequential kernel (gpu/chunk_gla_tc.cu, shared by the GLA
/// family and the delta rules) over each sequence's chunks, in order or (reverse) backwards, with
/// the state s [K, V] per (sequence, head): s <- Diag(decay) s + left^T right at each chunk. The
/// GLA forward's states h: left kd, right v, s0 = h0, and the output o = qd h + A16 v when o is
/// given; its backward's dh: left qd, right dO, s0 = dht, reverse. With w (the delta rules), the
/// update's right factor is v_new = right - w s instead (right = u), rounded to the input type,
/// and the output o = qd h + A16 v_new. With w and reverse (the delta rules' backward: left qd,
/// right dO, s0 = dht), each chunk's gradient of v_new is dv2 = A16^T dO + kd s, rounded to the
/// input type, and the update s <- Diag(decay) s + qd^T dO - w^T dv2. With w, forwards and
/// without an output, a second term left2^T right2 may join the update (dplr: left ad, right c,
/// left2 kd, right2 v, so that v_new is v2 = c - w s and s <- Diag(decay) s + ad^T v2 + kd^T v).
/// Arrays in the input type unless said; the optional outputs null when not wanted.
struct TcStatePass {
  const void *left = nullptr;   ///< [B*T, H, K]
  const void *right = nullptr;  ///< [B*T, H, V]
  const float *decay = nullptr; ///< [NC, H, G] e^{gl}, fp32
  const float *s0 = nullptr;    ///< [N, H, K, V] fp32, optional (zero)
  bool reverse = false;
  void *o = nullptr;                        ///< [B*T, H, V], optional
  const void *qd = nullptr, *A16 = nullptr; ///< the output's operands, with o (A16: dv2's too)
  float *s_end = nullptr;                   ///< [N, H, K, V] fp32: the state at the end
  float *s_chunks = nullptr;                ///< [NC, H, K, V] fp32: at each chunk's start
  void *s_chunks16 = nullptr;               ///< the same in the input type
  const void *w = nullptr;                  ///< [B*T, H, K]: the delta rules' w, with right = u
  const void *kd = nullptr;                 ///< [B*T, H, K]: with w and reverse, dv2's left factor
  float *v_new = nullptr;      ///< [B*T, H, V] fp32, optional (with w): v_new as the update used it
  void *v_new16 = nullptr;     ///< the same (dv2 with reverse) in the input type, optional
  const void *left2 = nullptr; ///< [B*T, H, K]: a second update term's left factor, optional
  const void *right2 = nullptr; ///< [B*T, H, V]: its right factor (with left2)
  /// [B*T, H] fp32, optional (a scalar gate's forward with the output: simple_gla, and
  /// gated_delta_rule with w; gated_delta_rule's passes backwards): each row's e^{g_cum} and
  /// e^{gl - g_cum}. left and qd are then k and q themselves: the output's state term is scaled by
  /// scale e^{g_cum} in fp32 after its product, the update's right factor (v, or v_new) by
  /// e^{gl - g_cum} before it is rounded. Backwards (w and reverse) left and kd are q and k: dO is
  /// scaled by scale e^{g_cum} and rounded for the update (q^T (dO . scale e^{g_cum})), and dv2's
  /// k dh by e^{gl - g_cum} in fp32 after its product.
  const float *row_up = nullptr, *row_to_end = nullptr;
  /// gated_delta_rule's backwards pass with row factors: the two uses of the state gradient that
  /// need it whole, made here in place of storing it (s_chunks16 then null): dk_s [B*T, H, K]
  /// fp32, v_new dh^T summed over every value (before its factor e^{gl - g_cum}), from v_new_in
  /// [B*T, H, V] (the forward's, input type); and h_dh [NC, H, V / 64] fp32, each block's sum of
  /// h . dh over its 64 values, from h_in [NC, H, K, V] (the states at each chunk's start, input
  /// type). The pass then takes eight more warps for them; each block adds its sums over its 64
  /// values into dk_s, which must be zero before it (two addends onto zero at V = 128: the same
  /// sum whichever block adds first).
  const void *v_new_in = nullptr, *h_in = nullptr;
  float *dk_s = nullptr, *h_dh = nullptr;
};
void launch_chunk_gla_state_tc(const TcStatePass &p, const DeviceChunkTable &t, const ChunkDims &d);

/// What the backwards pass makes of the state gradient in place of storing it (TcStatePass's
/// v_new_in, h_in, dk_s and h_dh): gated_delta_rule's, with row factors.
struct StateGradientUses {
  const void *v_new = nullptr, *h = nullptr;
  float *dk_s = nullptr, *h_dh = nullptr;
};
/// The sequential kernel backwards as the delta rules and dplr run it on tensor cores (w and
/// reverse: left qd, right dO, dv2's left factor kd and scores A16; s0 = dht, optional): dh after
/// each chunk into dh16 and dv2 in the input type, dh0 and dh's fp32 stage where given. With
/// row_up and row_to_end (a scalar gate's, TcStatePass::row_up), qd and kd are q and k; with them
/// and `uses` (dh16 then null), dh's uses in place of dh16.
inline void launch_state_gradients_tc(const void *qd, const void *d_o, const void *w,
                                      const void *kd, const void *A16, const float *decay,
                                      const float *dht, float *dh0, float *dh_stage, void *dh16,
                                      void *dv2, const DeviceChunkTable &t, const ChunkDims &d,
                                      const float *row_up = nullptr,
                                      const float *row_to_end = nullptr,
                                      const StateGradientUses &uses = {}) {
  TcStatePass p;
  p.left = qd;
  p.right = d_o;
  p.w = w;
  p.kd = kd;
  p.A16 = A16;
  p.decay = decay;
  p.s0 = dht;
  p.reverse = true;
  p.s_end = dh0;
  p.s_chunks = dh_stage;
  p.s_chunks16 = dh16;
  p.v_new16 = dv2;
  p.row_up = row_up;
  p.row_to_end = row_to_end;
  p.v_new_in = uses.v_new;
  p.h_in = uses.h;
  p.dk_s = uses.dk_s;
  p.h_dh = uses.h_dh;
  launch_chunk_gla_state_tc(p, t, d);
}

} // namespace detail
} // namespace ruleproof::gpu
