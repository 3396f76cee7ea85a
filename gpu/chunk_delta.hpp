// ruleproof: the host API of the chunkwise delta-rule kernels (gpu/chunk_delta.cu):
// gated_delta_rule (GateKind::scalar) and kda (GateKind::key), forward and backward, on device
// buffers, with every shape and element type checked (InputError) before anything runs
// (chunk_common.hpp states the conventions; beta is [B, T, H] fp32). Where ruleproof was built
// without nvcc the checks still run, then the call throws std::runtime_error.
#pragma once

#include "chunk_common.hpp"

namespace ruleproof::gpu {

/// \brief The tensors of one call, as device buffers (not owned). h0 may be null.
struct DeltaArgs {
  const DeviceArray *q = nullptr, *k = nullptr, *v = nullptr, *g = nullptr;
  const DeviceArray *beta = nullptr; ///< [B, T, H] fp32
  const DeviceArray *h0 = nullptr;   ///< initial state [N, H, K, V] fp32, or null (zeros)
};

/// \brief What the tensor-core forward keeps for its backward (ChunkOptions::keep_for_backward):
/// the scores Aqk and A = (I + A0)^-1 of every chunk, [B, T, H, 64] in the input type, zero above
/// the diagonal. Given to chunk_delta_bwd, its backward makes w, u and the decayed factors from A
/// in one pass over the inputs, in the place of the scores and the triangular solve again: the
/// same values bit for bit. Aqk may be empty (a forward without its output, gated_oja's, keeps A
/// alone): that pass then makes Aqk too. (flash-linear-attention's backward likewise starts from
/// its forward's A.)
struct DeltaSaved {
  DeviceArray Aqk, A;
  /// with ChunkOptions::keep_factors: the WY pass's w [B, T, H, K], u [B, T, H, V] in the input
  /// type, the decays e^{gl} [NC, H, G] fp32, and a per-key gate's qd and kd [B, T, H, K] in the
  /// input type or a scalar gate's row factors e^{g_cum} and e^{gl - g_cum} [B, T, H] fp32 (its
  /// backward's sequential passes scale q and k by them), which the backward then takes as they are
  /// (the values its own WY pass would make, bit for bit)
  DeviceArray w, u, qd, kd, decay, row_up, row_to_end;
  bool empty() const { return A.empty(); }
  bool has_factors() const { return !w.empty(); }
};

/// \brief The forward's outputs, and its stages when asked (else empty), named as
/// reference/kda/chunk.hpp names them.
struct DeltaForward {
  DeviceArray o;           ///< [B, T, H, V], the input type
  DeviceArray final_state; ///< [N, H, K, V] fp32, when output_final_state
  DeviceArray g_cum;       ///< stage: chunk_local_cumsum of g, g's shape, fp32
  DeviceArray A0;          ///< stage: chunk_scaled_dot_kkt, [B, T, H, 64] fp32, zero for j >= i
  DeviceArray A;           ///< stage: solve_tril, (I + A0)^-1, [B, T, H, 64] fp32, zero for j > i
  DeviceArray w;           ///< stage: recompute_w_u, [B, T, H, K] fp32
  DeviceArray u;           ///< stage: recompute_w_u, [B, T, H, V] fp32
  DeviceArray h;     ///< stage: chunk_fwd_h, the state at each chunk's start, [NC, H, K, V] fp32
  DeviceArray v_new; ///< stage: chunk_fwd_h, u - w h, [B, T, H, V] fp32
  DeltaSaved saved;  ///< for the backward, when opts.keep_for_backward on the tensor-core path
};

/// \brief The gradients of <dO, O> + <dS_T, S_T>, and the backward's stage when asked.
struct DeltaGrads {
  DeviceArray dq, dk, dv; ///< shapes of q, k, v, the input type
  DeviceArray dg;         ///< shape of g, fp32
  DeviceArray dbeta;      ///< [B, T, H] fp32
  DeviceArray dh0;        ///< [N, H, K, V] fp32, when h0 was given
  DeviceArray dh; ///< stage: chunk_bwd_dhu, gradient of the state after each chunk, [NC, H, K, V]
};

/// \brief check_chunk_shapes, and beta fp32 [B, T, H].
ChunkShapes check_delta_shapes(GateKind gate, const ArraySpec &q, const ArraySpec &k,
                               const ArraySpec &v, const ArraySpec &g, const ArraySpec &beta,
                               const ArraySpec *h0, const ChunkOptions &opts,
                               const ArraySpec *d_o = nullptr, const ArraySpec *d_ht = nullptr);

/// \brief A DeltaSaved's tensors against a call of shapes s and input type `in` (InputError
/// naming saved.Aqk or saved.A): each [B, T, H, 64] in the input type (Aqk null: none kept); and
/// the call on the tensor-core path, the forward that makes them.
void check_delta_saved(const ChunkShapes &s, DType in, const ArraySpec *Aqk, const ArraySpec &A,
                       const ChunkOptions &opts);
/// \brief A DeltaSaved's factors (keep_factors) against a call of shapes s, input type `in` and
/// gate kind `gate`: q_factor and k_factor are a per-key gate's qd and kd, a scalar gate's row_up
/// and row_to_end (InputError naming saved.w, saved.u, saved.qd, saved.kd, saved.row_up,
/// saved.row_to_end or saved.decay).
void check_delta_saved_factors(const ChunkShapes &s, DType in, GateKind gate, const ArraySpec &w,
                               const ArraySpec &u, const ArraySpec &q_factor,
                               const ArraySpec &k_factor, const ArraySpec &decay);

/// \brief Chunkwise forward of kda (GateKind::key) or gated_delta_rule (GateKind::scalar).
DeltaForward chunk_delta_fwd(GateKind gate, const DeltaArgs &args, const ChunkOptions &opts);

/// \brief Chunkwise backward (recomputes the forward's stages); d_ht may be null (zero). `saved`
/// (the forward's DeltaForward::saved of the same arguments, tensor-core path) spares it the
/// scores and the solve; its shapes and types are checked (InputError), not its values.
DeltaGrads chunk_delta_bwd(GateKind gate, const DeltaArgs &args, const DeviceArray &d_o,
                           const DeviceArray *d_ht, const ChunkOptions &opts,
                           const DeltaSaved *saved = nullptr);

/// \brief What kda's tensor-core kernels give a rule that runs them on other arguments
/// (gated_oja, with keys and values exchanged: gpu/chunk_gated_oja.cpp): the states at each
/// chunk's start [NC, H, K, V] and v_new [B, T, H, V] in the input type, the final state (fp32,
/// when opts.output_final_state), and the stages in fp32 when opts.return_stages (`stages`, its o
/// and final_state empty).
struct DeltaTcStates {
  DeviceArray h, v_new, final_state;
  DeltaForward stages;
  DeltaSaved saved; ///< A alone, when opts.keep_for_backward (no Aqk: the pass has no output)
};
/// \brief The tensor-core forward of kda without its output: the WY kernel, then the sequential
/// kernel forwards storing the states and v_new (opts.path is not read).
DeltaTcStates chunk_delta_tc_states(const DeltaArgs &args, const ChunkOptions &opts);
/// \brief kda's backward on tensor cores (opts.path is not read) that also returns the forward's
/// output o, which its forward pass computes on the way (gated_oja's dq is kda's output on its
/// exchanged arguments); `saved` as chunk_delta_bwd's (chunk_delta_tc_states' of the same k, g and
/// beta: A depends on no other argument).
DeltaGrads chunk_delta_tc_bwd_with_output(const DeltaArgs &args, const DeviceArray &d_o,
                                          const DeviceArray *d_ht, const ChunkOptions &opts,
                                          DeviceArray &o, const DeltaSaved *saved = nullptr);

} // namespace ruleproof::gpu
