// ruleproof: the host side of the chunkwise delta-rule kernels: shape checks, buffers, and the
// kernels' order. Forward: chunk_local_cumsum, chunk_wy_fwd (chunk_scaled_dot_kkt, solve_tril,
// recompute_w_u), chunk_delta_fwd_h, chunk_fwd_o; gated_delta_rule's on tensor cores
// and kda's (KernelPath::tensor_cores): chunk_delta_wy_tc, then chunk_gla_state_tc with w (or,
// gated_delta_rule's on compute capability 9.0, chunk_delta_a_tc, then chunk_delta_fused_tc from
// its A; delta_forward_form).
// Backward: the forward's stages again (none is stored by the forward), then chunk_bwd_dv_local,
// chunk_bwd_dhu, chunk_bwd_dqkwg, chunk_wy_bwd (prepare_wy_repr_bwd), chunk_local_cumsum_reverse;
// gated_delta_rule's and kda's on tensor cores: chunk_delta_wy_tc (or, given the forward's saved
// Aqk and A, chunk_delta_wy_from_a_tc: w, u and the decayed factors from A, no solve; given its
// w, u and decayed factors too, keep_factors, no WY pass), chunk_gla_state_tc forwards (or,
// gated_delta_rule's under the fused forms, chunk_delta_fused_tc's states form from A) and
// backwards, then chunk_delta_bwd_tc.
#include "chunk_delta.hpp"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>

#include "detail/delta_launch.hpp"

namespace ruleproof::gpu {

namespace {

using detail::ChunkTable;
using detail::dims_of;
using detail::f32;
using detail::output;

/// Every stage of the forward but the output: g_cum, A0, A, w, u, h, v_new, and (when asked)
/// the final state.
struct Stages {
  DeviceArray g_cum, A0, A, w, u, h, v_new, ht;
};
/// The stages' buffers, fp32 (and the final state's, when asked).
Stages stage_buffers(const DeltaArgs &args, const ChunkShapes &s, bool with_ht, bool poison) {
  const std::size_t C = kernel_chunk_size;
  Stages st;
  st.g_cum = output(DType::fp32, args.g->shape(), poison);
  st.A0 = output(DType::fp32, {s.B, s.T, s.H, C}, poison);
  st.A = output(DType::fp32, {s.B, s.T, s.H, C}, poison);
  st.w = output(DType::fp32, {s.B, s.T, s.H, s.K}, poison);
  st.u = output(DType::fp32, {s.B, s.T, s.H, s.V}, poison);
  st.h = output(DType::fp32, {s.NC, s.H, s.K, s.V}, poison);
  st.v_new = output(DType::fp32, {s.B, s.T, s.H, s.V}, poison);
  if (with_ht)
    st.ht = output(DType::fp32, {s.N, s.H, s.K, s.V}, poison);
  return st;
}

/// The stages as a forward returns them.
void return_stages(Stages &st, DeltaForward &r) {
  r.g_cum = std::move(st.g_cum);
  r.A0 = std::move(st.A0);
  r.A = std::move(st.A);
  r.w = std::move(st.w);
  r.u = std::move(st.u);
  r.h = std::move(st.h);
  r.v_new = std::move(st.v_new);
}

Stages forward_stages(const DeltaArgs &args, const ChunkTable &table, const detail::ChunkDims &d,
                      const ChunkShapes &s, bool with_ht, bool poison) {
  Stages st = stage_buffers(args, s, with_ht, poison);
  const detail::DeviceChunkTable t = table.device();
  detail::launch_chunk_local_cumsum(f32(args.g), f32(st.g_cum), t, d);
  detail::launch_chunk_wy_fwd(args.k->data(), args.v->data(), f32(args.beta), f32(st.g_cum),
                              f32(st.A0), f32(st.A), f32(st.w), f32(st.u), t, d);
  detail::launch_chunk_delta_fwd_h(args.k->data(), f32(st.w), f32(st.u), f32(st.g_cum),
                                   f32(args.h0), f32(st.h), f32(st.v_new),
                                   with_ht ? f32(st.ht) : nullptr, t, d);
  return st;
}

/// The tensor-core WY kernel's outputs (gpu/detail/delta_launch.hpp, DeltaTcScratch), in the
/// input type but for the decays.
struct TcWy {
  DeviceArray Aqk, qd, kd, w, u, decay, A, row_up, row_to_end;
};
/// Runs the tensor-core WY kernel into new buffers (A too when with_A; Aqk and qd only with_scores:
/// kda's states alone, for gated_oja, skip them; with row_factors, a scalar gate's, each row's
/// e^{g_cum} and e^{gl - g_cum} in place of qd and kd), the stages into `st`.
TcWy tensor_core_wy(const DeltaArgs &args, const detail::DeviceChunkTable &t,
                    const detail::ChunkDims &d, const ChunkShapes &s, bool poison,
                    const detail::DeltaTcStages &st, bool with_A, bool with_scores = true,
                    bool row_factors = false) {
  const std::size_t C = kernel_chunk_size;
  const DType in = args.q->dtype();
  TcWy r;
  if (with_scores)
    r.Aqk = output(in, {s.B, s.T, s.H, C}, poison);
  if (row_factors) {
    r.row_up = output(DType::fp32, {s.B, s.T, s.H}, poison);
    r.row_to_end = output(DType::fp32, {s.B, s.T, s.H}, poison);
  } else {
    if (with_scores)
      r.qd = output(in, args.q->shape(), poison);
    r.kd = output(in, args.k->shape(), poison);
  }
  r.w = output(in, args.k->shape(), poison);
  r.u = output(in, args.v->shape(), poison);
  r.decay = output(DType::fp32, {s.NC, s.H, std::size_t(d.G)}, poison);
  if (with_A)
    r.A = output(in, {s.B, s.T, s.H, C}, poison);
  const detail::DeltaTcScratch x{with_scores ? r.Aqk.data() : nullptr,
                                 r.qd.data(),
                                 r.kd.data(),
                                 r.w.data(),
                                 r.u.data(),
                                 f32(r.decay),
                                 with_A ? r.A.data() : nullptr,
                                 f32(r.row_up),
                                 f32(r.row_to_end)};
  detail::launch_chunk_delta_wy_tc(args.q->data(), args.k->data(), args.v->data(), f32(args.g),
                                   f32(args.beta), x, st, t, d);
  return r;
}

/// Whether gated_delta_rule's tensor-core backward makes its state gradient's uses in place of
/// storing it, from RULEPROOF_DELTA_DH in the environment: `stored` (the default: dh of every chunk
/// stored in the input type for the backward kernel to read) or `uses` (the sequential kernel
/// backwards makes dh's two uses itself, v_new dh^T and sum(h . dh), and dh is never stored; it
/// holds gpu-check and is slower at the benchmark's shape, moving more bytes than it saves:
/// reports/gpu/tensor_core.md, "The backward that never stores dh").
bool state_gradient_uses() {
  static const bool uses = detail::other_form("RULEPROOF_DELTA_DH", "stored", "uses");
  return uses;
}

/// How gated_delta_rule's tensor-core forward runs, from RULEPROOF_DELTA_FORWARD in the
/// environment: `held` (A of every chunk first, launch_chunk_delta_a_tc, then the forward with the
/// state held in registers, launch_chunk_delta_held_tc; the default where the device runs sm_90a
/// code), `fused_a` (the same A, then one kernel of four warpgroups on warpgroup MMA for the rest,
/// launch_chunk_delta_fused_tc without A0 and the solve), `fused` (that kernel alone, its solve
/// inside) or `two` (the WY kernel, then the sequential kernel; the default elsewhere). The
/// one-kernel forms take a call whose forward returns no stages (those they do not write); the
/// others take the two kernels. Under the one-kernel forms a forward keeps A and Aqk alone, never
/// the WY factors (keep_factors), and the backward makes its stages from A in one kernel
/// (fused_states). Anything else is an error.
enum class ForwardForm { two, fused, fused_a, held };
ForwardForm delta_forward_form() {
  static const ForwardForm kind = [] {
    const char *kernel = std::getenv("RULEPROOF_DELTA_FORWARD");
    if (!kernel || !*kernel)
      return detail::runs_sm90a() ? ForwardForm::held : ForwardForm::two;
    const std::string_view name = kernel;
    if (name == "two")
      return ForwardForm::two;
    if (name == "fused")
      return ForwardForm::fused;
    if (name == "fused_a")
      return ForwardForm::fused_a;
    if (name == "held")
      return ForwardForm::held;
    throw std::invalid_argument("RULEPROOF_DELTA_FORWARD: '" + std::string(name) +
                                "' is none of two, fused, fused_a, held");
  }();
  return kind;
}

/// What the tensor-core forward pass gives: the output, or (kda's states alone) the states at
/// each chunk's start and v_new in the input type; the final state and the fp32 stages when asked.
struct TcForward {
  DeviceArray o, h16, v_new16, final_state;
  Stages stages;
  DeltaSaved saved; ///< with opts.keep_for_backward: A, and Aqk with the output
};
/// The forward of gated_delta_rule and kda on tensor cores (gpu/chunk_delta_tc.cu): the WY
/// kernel, then the sequential kernel with w (v_new and the state fused with the output when
/// with_output, else storing the states and v_new); the stages written when asked for.
TcForward tensor_core_pass(const DeltaArgs &args, const ChunkTable &table,
                           const detail::ChunkDims &d, const ChunkShapes &s,
                           const ChunkOptions &opts, bool with_output) {
  const bool poison = opts.poison_outputs, stages = opts.return_stages;
  const DType in = args.q->dtype();
  const detail::DeviceChunkTable t = table.device();
  TcForward r;
  detail::DeltaTcStages st;
  if (stages) {
    r.stages = stage_buffers(args, s, false, poison);
    st = {f32(r.stages.g_cum), f32(r.stages.A0), f32(r.stages.A), f32(r.stages.w), f32(r.stages.u)};
  }
  // a scalar gate's output pass scales by each row's factors: k and q go in undecayed
  const bool row_factors = with_output && d.G == 1;
  const bool keep = opts.keep_for_backward;
  // the factors for the backward (a scalar gate's: its row factors, as the output pass's); the
  // fused forms keep none: their backward makes its stages from A in one kernel (fused_states)
  const bool keep_factors = keep && opts.keep_factors && with_output;
  const ForwardForm form = delta_forward_form();
  if (row_factors && !stages && form != ForwardForm::two) {
    if (opts.output_final_state)
      r.final_state = output(DType::fp32, {s.N, s.H, s.K, s.V}, poison);
    r.o = output(in, {s.B, s.T, s.H, s.V}, poison);
    if (keep) {
      r.saved.Aqk = output(in, {s.B, s.T, s.H, kernel_chunk_size}, poison);
      r.saved.A = output(in, {s.B, s.T, s.H, kernel_chunk_size}, poison);
    }
    DeviceArray timeline;
    detail::DeltaFusedPass p =
        detail::fused_pass(args.q, args.k, args.v, args.g, args.beta, args.h0, timeline);
    p.o = r.o.data();
    p.A = keep ? r.saved.A.data() : nullptr;
    p.Aqk = keep ? r.saved.Aqk.data() : nullptr;
    p.s_end = opts.output_final_state ? f32(r.final_state) : nullptr;
    DeviceArray a_made; // A for the fused kernel, where the call keeps none
    const bool a_given = form == ForwardForm::fused_a || form == ForwardForm::held;
    if (a_given) {
      if (!keep)
        a_made = output(in, {s.B, s.T, s.H, kernel_chunk_size}, poison);
      p.A = keep ? r.saved.A.data() : a_made.data();
      // the saved Aqk from the fused kernel's own sums, as the states form makes it for a
      // backward that solves again (fused_states)
      detail::launch_chunk_delta_a_tc(p.k, p.g, p.beta, p.A, t, d);
    }
    if (form == ForwardForm::held)
      detail::launch_chunk_delta_held_tc(p, t, d);
    else
      detail::launch_chunk_delta_fused_tc(p, t, d, a_given);
    detail::append_fused_timeline(p, timeline);
    return r;
  }
  TcWy wy = tensor_core_wy(args, t, d, s, poison, st, keep, with_output, row_factors);
  if (opts.output_final_state)
    r.final_state = output(DType::fp32, {s.N, s.H, s.K, s.V}, poison);
  detail::TcStatePass p;
  p.left = row_factors ? args.k->data() : wy.kd.data();
  if (row_factors) {
    p.row_up = f32(wy.row_up);
    p.row_to_end = f32(wy.row_to_end);
  }
  p.right = wy.u.data();
  p.w = wy.w.data();
  p.decay = f32(wy.decay);
  p.s0 = f32(args.h0);
  if (with_output) {
    r.o = output(in, {s.B, s.T, s.H, s.V}, poison);
    p.o = r.o.data();
    p.qd = row_factors ? args.q->data() : wy.qd.data();
    p.A16 = wy.Aqk.data();
  } else {
    r.h16 = output(in, {s.NC, s.H, s.K, s.V}, poison);
    r.v_new16 = output(in, args.v->shape(), poison);
    p.s_chunks16 = r.h16.data();
    p.v_new16 = r.v_new16.data();
  }
  p.s_end = opts.output_final_state ? f32(r.final_state) : nullptr;
  p.s_chunks = stages ? f32(r.stages.h) : nullptr;
  p.v_new = stages ? f32(r.stages.v_new) : nullptr;
  detail::launch_chunk_gla_state_tc(p, t, d);
  if (keep) {
    r.saved.Aqk = std::move(wy.Aqk);
    r.saved.A = std::move(wy.A);
  }
  if (keep_factors) {
    r.saved.w = std::move(wy.w);
    r.saved.u = std::move(wy.u);
    r.saved.qd = std::move(wy.qd);
    r.saved.kd = std::move(wy.kd);
    r.saved.row_up = std::move(wy.row_up);
    r.saved.row_to_end = std::move(wy.row_to_end);
    r.saved.decay = std::move(wy.decay);
  }
  return r;
}

/// The backward's WY pass from the forward's saved A (launch_chunk_delta_wy_from_a_tc): qd, kd,
/// w, u and the decays into new buffers, as tensor_core_wy(..., with_A) makes them, and Aqk where
/// `saved` has none (gated_oja's forward keeps A alone); the saved ones stay the caller's.
TcWy tensor_core_wy_from_a(const DeltaArgs &args, const DeltaSaved &saved,
                           const detail::DeviceChunkTable &t, const detail::ChunkDims &d,
                           const ChunkShapes &s, bool poison) {
  const DType in = args.q->dtype();
  TcWy r;
  if (d.G == 1) { // a scalar gate's row factors: q and k go undecayed into the sequential passes
    r.row_up = output(DType::fp32, {s.B, s.T, s.H}, poison);
    r.row_to_end = output(DType::fp32, {s.B, s.T, s.H}, poison);
  } else {
    r.qd = output(in, args.q->shape(), poison);
    r.kd = output(in, args.k->shape(), poison);
  }
  r.w = output(in, args.k->shape(), poison);
  r.u = output(in, args.v->shape(), poison);
  r.decay = output(DType::fp32, {s.NC, s.H, std::size_t(d.G)}, poison);
  detail::DeltaTcScratch x;
  if (saved.Aqk.empty()) {
    r.Aqk = output(in, {s.B, s.T, s.H, kernel_chunk_size}, poison);
    x.Aqk = r.Aqk.data();
  }
  x.qd = r.qd.data();
  x.kd = r.kd.data();
  x.w = r.w.data();
  x.u = r.u.data();
  x.decay = f32(r.decay);
  x.row_up = f32(r.row_up);
  x.row_to_end = f32(r.row_to_end);
  detail::launch_chunk_delta_wy_from_a_tc(args.q->data(), args.k->data(), args.v->data(),
                                          f32(args.g), f32(args.beta), saved.A.data(), x, t, d);
  return r;
}

/// The backward's forward stages of gated_delta_rule under the fused forms (delta_forward_form,
/// fused or fused_a), in one kernel from A (launch_chunk_delta_fused_states_tc): A from `saved`, or
/// made first (launch_chunk_delta_a_tc) and Aqk by that kernel, as a forward keeping them makes
/// them, so that a backward from the saved A and Aqk gives what this does, bit for bit; w, the
/// decays and the row factors into new buffers as tensor_core_wy_from_a makes them (u and qd, kd
/// none), and the states at each chunk's start and v_new into h16 and v_new.
TcWy fused_states(const DeltaArgs &args, const DeltaSaved *saved, const detail::DeviceChunkTable &t,
                  const detail::ChunkDims &d, const ChunkShapes &s, bool poison, DeviceArray &h16,
                  DeviceArray &v_new) {
  const DType in = args.q->dtype();
  TcWy r;
  if (!saved) {
    r.A = output(in, {s.B, s.T, s.H, kernel_chunk_size}, poison);
    r.Aqk = output(in, {s.B, s.T, s.H, kernel_chunk_size}, poison);
    detail::launch_chunk_delta_a_tc(args.k->data(), f32(args.g), f32(args.beta), r.A.data(), t, d);
  }
  r.w = output(in, args.k->shape(), poison);
  r.decay = output(DType::fp32, {s.NC, s.H, 1}, poison);
  r.row_up = output(DType::fp32, {s.B, s.T, s.H}, poison);
  r.row_to_end = output(DType::fp32, {s.B, s.T, s.H}, poison);
  h16 = output(in, {s.NC, s.H, s.K, s.V}, poison);
  v_new = output(in, args.v->shape(), poison);
  DeviceArray timeline; // (none: the states form keeps no timeline)
  detail::DeltaFusedPass p =
      detail::fused_pass(args.q, args.k, args.v, args.g, args.beta, args.h0, timeline);
  p.timeline = nullptr;
  p.A = const_cast<void *>(saved ? saved->A.data() : r.A.data()); // read, not written
  p.Aqk = saved ? nullptr : r.Aqk.data();
  p.h16 = h16.data();
  p.v_new16 = v_new.data();
  p.w = r.w.data();
  p.row_up = f32(r.row_up);
  p.row_to_end = f32(r.row_to_end);
  p.decay = f32(r.decay);
  detail::launch_chunk_delta_fused_states_tc(p, t, d);
  return r;
}

/// The backward of gated_delta_rule and kda on tensor cores: the WY kernel again (with A; from
/// the saved A, or none where the forward kept its factors), the sequential kernel forwards (h at
/// each chunk's start and v_new) and backwards (dh after each chunk, dv2 and dh0; gated_delta_rule
/// with RULEPROOF_DELTA_DH=uses dh's two uses in place of dh: state_gradient_uses), all in the
/// input type, then
/// chunk_delta_bwd_tc (gpu/chunk_delta_bwd_tc.cu).
DeltaGrads tensor_core_backward(const DeltaArgs &args, const DeviceArray &d_o,
                                const DeviceArray *d_ht, const ChunkTable &table,
                                const detail::ChunkDims &d, const ChunkShapes &s,
                                const ChunkOptions &opts, DeviceArray *o = nullptr,
                                const DeltaSaved *saved = nullptr) {
  const bool poison = opts.poison_outputs;
  const bool with_dht = d_ht && !d_ht->empty(), with_dh0 = args.h0 && !args.h0->empty();
  const DType in = args.q->dtype();
  const detail::DeviceChunkTable t = table.device();
  const bool from_a = saved && !saved->empty();
  const bool kept = from_a && saved->has_factors() && !saved->Aqk.empty();
  // a scalar gate's sequential passes take q and k undecayed, scaled by each row's factors
  const bool row_factors = d.G == 1;
  // gated_delta_rule under the fused forms: its stages from A in one kernel (from a saved A with
  // its Aqk: gated_delta_rule's forward keeps both)
  const bool fused = row_factors && !kept && !o && delta_forward_form() != ForwardForm::two &&
                     !(from_a && saved->Aqk.empty());
  TcWy wy;
  DeviceArray h16, v_new; // the states at each chunk's start, v_new
  if (fused)
    wy = fused_states(args, from_a ? saved : nullptr, t, d, s, poison, h16, v_new);
  else if (!kept)
    wy = from_a ? tensor_core_wy_from_a(args, *saved, t, d, s, poison)
                : tensor_core_wy(args, t, d, s, poison, detail::DeltaTcStages{}, true, true,
                                 row_factors);
  const void *Aqk = from_a && !saved->Aqk.empty() ? saved->Aqk.data() : wy.Aqk.data();
  const void *A = from_a ? saved->A.data() : wy.A.data();
  // the WY factors the passes read: the forward's kept ones, or those just made
  const auto factor = [&](DeviceArray DeltaSaved::*kept_one,
                          const DeviceArray &made) -> const DeviceArray & {
    return kept ? saved->*kept_one : made;
  };
  const void *qd = row_factors ? args.q->data() : factor(&DeltaSaved::qd, wy.qd).data();
  const void *kd = row_factors ? args.k->data() : factor(&DeltaSaved::kd, wy.kd).data();
  // (null without row factors: empty either way)
  const float *row_up = f32(&factor(&DeltaSaved::row_up, wy.row_up));
  const float *row_to_end = f32(&factor(&DeltaSaved::row_to_end, wy.row_to_end));
  const void *w = factor(&DeltaSaved::w, wy.w).data();
  const void *u = factor(&DeltaSaved::u, wy.u).data();
  const float *decay = f32(&factor(&DeltaSaved::decay, wy.decay));
  if (!fused) { // the sequential kernel forwards: h at each chunk's start and v_new
    h16 = output(in, {s.NC, s.H, s.K, s.V}, poison);
    v_new = output(in, args.v->shape(), poison);
    detail::TcStatePass fwd;
    fwd.left = kd;
    fwd.row_up = row_up;
    fwd.row_to_end = row_to_end;
    fwd.right = u;
    fwd.w = w;
    fwd.decay = decay;
    fwd.s0 = f32(args.h0);
    fwd.s_chunks16 = h16.data();
    fwd.v_new16 = v_new.data();
    if (o) { // the output too, on the way
      *o = output(in, {s.B, s.T, s.H, s.V}, poison);
      fwd.o = o->data();
      fwd.qd = qd;
      fwd.A16 = Aqk;
    }
    detail::launch_chunk_gla_state_tc(fwd, t, d);
  }

  DeltaGrads r;
  if (opts.return_stages)
    r.dh = output(DType::fp32, {s.NC, s.H, s.K, s.V}, poison);
  if (with_dh0)
    r.dh0 = output(DType::fp32, {s.N, s.H, s.K, s.V}, poison);
  // dh of every chunk in the input type; gated_delta_rule with RULEPROOF_DELTA_DH=uses: dh's two
  // uses made backwards, dh never stored
  const bool dh_uses = row_factors && state_gradient_uses();
  DeviceArray dh16, dk_s, h_dh;
  detail::StateGradientUses uses;
  if (dh_uses) {
    dk_s = output(DType::fp32, args.k->shape(), poison);
    // each block of a sequence and head adds its half of v_new dh^T into it
    detail::device_fill_bytes_queued(dk_s.data(), 0, dk_s.bytes());
    h_dh = output(DType::fp32, {s.NC, s.H, s.V / detail::TC_BV}, poison);
    uses = {v_new.data(), h16.data(), f32(dk_s), f32(h_dh)};
  } else {
    dh16 = output(in, {s.NC, s.H, s.K, s.V}, poison);
  }
  DeviceArray dv2 = output(in, args.v->shape(), poison);
  detail::launch_state_gradients_tc(
      qd, d_o.data(), w, kd, Aqk, decay, with_dht ? f32(d_ht) : nullptr,
      with_dh0 ? f32(r.dh0) : nullptr, opts.return_stages ? f32(r.dh) : nullptr,
      dh_uses ? nullptr : dh16.data(), dv2.data(), t, d, row_up, row_to_end, uses);

  r.dq = output(in, args.q->shape(), poison);
  r.dk = output(in, args.k->shape(), poison);
  r.dv = output(in, args.v->shape(), poison);
  r.dbeta = output(DType::fp32, args.beta->shape(), poison);
  r.dg = output(DType::fp32, args.g->shape(), poison);
  const detail::DeltaTcBackward b{
      A,         h16.data(), dh_uses ? nullptr : dh16.data(), v_new.data(), dv2.data(),
      f32(dk_s), f32(h_dh)};
  detail::launch_chunk_delta_bwd_tc(args.q->data(), args.k->data(), args.v->data(), f32(args.g),
                                    f32(args.beta), d_o.data(), b, r.dq.data(), r.dk.data(),
                                    r.dv.data(), f32(r.dbeta), f32(r.dg), t, d);
  return r;
}

void expect_args(const DeltaArgs &args) {
  if (!args.q || !args.k || !args.v || !args.g || !args.beta)
    throw InputError(!args.q   ? "q"
                     : !args.k ? "k"
                     : !args.v ? "v"
                     : !args.g ? "g"
                               : "beta",
                     "missing");
}

ChunkShapes shapes_of(GateKind gate, const DeltaArgs &args, const ChunkOptions &opts,
                      const DeviceArray *d_o = nullptr, const DeviceArray *d_ht = nullptr) {
  expect_args(args);
  return check_delta_shapes(gate, args.q->spec(), args.k->spec(), args.v->spec(), args.g->spec(),
                            args.beta->spec(), args.h0 ? &args.h0->spec() : nullptr, opts,
                            d_o ? &d_o->spec() : nullptr, d_ht ? &d_ht->spec() : nullptr);
}

} // namespace

ChunkShapes check_delta_shapes(GateKind gate, const ArraySpec &q, const ArraySpec &k,
                               const ArraySpec &v, const ArraySpec &g, const ArraySpec &beta,
                               const ArraySpec *h0, const ChunkOptions &opts, const ArraySpec *d_o,
                               const ArraySpec *d_ht) {
  const ChunkShapes s = check_chunk_shapes(gate, q, k, v, g, h0, opts, d_o, d_ht);
  detail::expect("beta", beta, DType::fp32, {s.B, s.T, s.H});
  return s;
}

void check_delta_saved(const ChunkShapes &s, DType in, const ArraySpec *Aqk, const ArraySpec &A,
                       const ChunkOptions &opts) {
  if (opts.path != KernelPath::tensor_cores)
    throw InputError("saved.A", "is the tensor-core forward's; this call's path is another");
  const Shape scores{s.B, s.T, s.H, kernel_chunk_size};
  if (Aqk)
    detail::expect("saved.Aqk", *Aqk, in, scores);
  detail::expect("saved.A", A, in, scores);
}

void check_delta_saved_factors(const ChunkShapes &s, DType in, GateKind gate, const ArraySpec &w,
                               const ArraySpec &u, const ArraySpec &q_factor,
                               const ArraySpec &k_factor, const ArraySpec &decay) {
  const bool scalar = gate == GateKind::scalar;
  detail::expect("saved.w", w, in, {s.B, s.T, s.H, s.K});
  detail::expect("saved.u", u, in, {s.B, s.T, s.H, s.V});
  if (scalar) {
    detail::expect("saved.row_up", q_factor, DType::fp32, {s.B, s.T, s.H});
    detail::expect("saved.row_to_end", k_factor, DType::fp32, {s.B, s.T, s.H});
  } else {
    detail::expect("saved.qd", q_factor, in, {s.B, s.T, s.H, s.K});
    detail::expect("saved.kd", k_factor, in, {s.B, s.T, s.H, s.K});
  }
  detail::expect("saved.decay", decay, DType::fp32, {s.NC, s.H, scalar ? std::size_t(1) : s.K});
}

namespace {
/// check_delta_saved of a backward's `saved` (null or empty: nothing to check).
void check_saved(const ChunkShapes &s, GateKind gate, const DeltaArgs &args,
                 const DeltaSaved *saved, const ChunkOptions &opts) {
  if (!saved || saved->empty())
    return;
  const ArraySpec Aqk = saved->Aqk.spec();
  check_delta_saved(s, args.q->dtype(), saved->Aqk.empty() ? nullptr : &Aqk, saved->A.spec(), opts);
  const bool scalar = gate == GateKind::scalar;
  if (saved->has_factors())
    check_delta_saved_factors(s, args.q->dtype(), gate, saved->w.spec(), saved->u.spec(),
                              (scalar ? saved->row_up : saved->qd).spec(),
                              (scalar ? saved->row_to_end : saved->kd).spec(), saved->decay.spec());
}
} // namespace

DeltaForward chunk_delta_fwd(GateKind gate, const DeltaArgs &args, const ChunkOptions &opts) {
  const ChunkShapes s = shapes_of(gate, args, opts);
  const detail::ChunkDims d = dims_of(gate, s, opts, args.q->dtype());
  const ChunkTable table(s.B, s.T, opts.cu_seqlens);
  const bool poison = opts.poison_outputs;
  if (opts.path == KernelPath::tensor_cores &&
      (gate == GateKind::scalar || gate == GateKind::key)) {
    TcForward f = tensor_core_pass(args, table, d, s, opts, true);
    DeltaForward r;
    r.o = std::move(f.o);
    r.final_state = std::move(f.final_state);
    r.saved = std::move(f.saved);
    if (opts.return_stages)
      return_stages(f.stages, r);
    return r;
  }
  Stages st = forward_stages(args, table, d, s, opts.output_final_state, poison);
  DeltaForward r;
  r.o = output(args.q->dtype(), {s.B, s.T, s.H, s.V}, poison);
  detail::launch_chunk_delta_fwd_o(args.q->data(), args.k->data(), f32(st.v_new), f32(st.g_cum),
                                   f32(st.h), r.o.data(), table.device(), d);
  r.final_state = std::move(st.ht);
  if (opts.return_stages)
    return_stages(st, r);
  return r;
}

DeltaTcStates chunk_delta_tc_states(const DeltaArgs &args, const ChunkOptions &opts) {
  const ChunkShapes s = shapes_of(GateKind::key, args, opts);
  const detail::ChunkDims d = dims_of(GateKind::key, s, opts, args.q->dtype());
  const ChunkTable table(s.B, s.T, opts.cu_seqlens);
  TcForward f = tensor_core_pass(args, table, d, s, opts, false);
  DeltaTcStates r;
  r.h = std::move(f.h16);
  r.v_new = std::move(f.v_new16);
  r.final_state = std::move(f.final_state);
  r.saved = std::move(f.saved);
  if (opts.return_stages)
    return_stages(f.stages, r.stages);
  return r;
}

DeltaGrads chunk_delta_tc_bwd_with_output(const DeltaArgs &args, const DeviceArray &d_o,
                                          const DeviceArray *d_ht, const ChunkOptions &opts,
                                          DeviceArray &o, const DeltaSaved *saved) {
  const ChunkShapes s = shapes_of(GateKind::key, args, opts, &d_o, d_ht);
  check_saved(s, GateKind::key, args, saved, opts);
  const detail::ChunkDims d = dims_of(GateKind::key, s, opts, args.q->dtype());
  const ChunkTable table(s.B, s.T, opts.cu_seqlens);
  return tensor_core_backward(args, d_o, d_ht, table, d, s, opts, &o, saved);
}

DeltaGrads chunk_delta_bwd(GateKind gate, const DeltaArgs &args, const DeviceArray &d_o,
                           const DeviceArray *d_ht, const ChunkOptions &opts,
                           const DeltaSaved *saved) {
  const ChunkShapes s = shapes_of(gate, args, opts, &d_o, d_ht);
  check_saved(s, gate, args, saved, opts);
  const detail::ChunkDims d = dims_of(gate, s, opts, args.q->dtype());
  const ChunkTable table(s.B, s.T, opts.cu_seqlens);
  if (opts.path == KernelPath::tensor_cores && (gate == GateKind::scalar || gate == GateKind::key))
    return tensor_core_backward(args, d_o, d_ht, table, d, s, opts, nullptr, saved);
  const detail::DeviceChunkTable t = table.device();
  const bool poison = opts.poison_outputs;
  const DType in = args.q->dtype();
  // the final state's gradient reaches g through dh alone: no final state is needed
  Stages st = forward_stages(args, table, d, s, false, poison);
  DeviceArray dv2 = output(DType::fp32, {s.B, s.T, s.H, s.V}, poison); // gradient of v_new
  detail::launch_chunk_bwd_dv_local(args.q->data(), args.k->data(), f32(st.g_cum), d_o.data(),
                                    f32(dv2), t, d);
  DeltaGrads r;
  r.dh = output(DType::fp32, {s.NC, s.H, s.K, s.V}, poison);
  const bool with_dh0 = args.h0 && !args.h0->empty();
  if (with_dh0)
    r.dh0 = output(DType::fp32, {s.N, s.H, s.K, s.V}, poison);
  detail::launch_chunk_bwd_dhu(args.q->data(), args.k->data(), f32(st.w), f32(st.g_cum), d_o.data(),
                               f32(d_ht), f32(dv2), f32(r.dh), with_dh0 ? f32(r.dh0) : nullptr, t,
                               d);
  r.dq = output(in, args.q->shape(), poison);
  DeviceArray dk_qkw = output(DType::fp32, {s.B, s.T, s.H, s.K}, poison);
  DeviceArray dw = output(DType::fp32, {s.B, s.T, s.H, s.K}, poison);
  DeviceArray dG = output(DType::fp32, {s.B, s.T, s.H, s.K}, poison);
  detail::launch_chunk_bwd_dqkwg(args.q->data(), args.k->data(), f32(st.v_new), f32(st.g_cum),
                                 f32(st.h), d_o.data(), f32(r.dh), f32(dv2), r.dq.data(),
                                 f32(dk_qkw), f32(dw), f32(dG), t, d);
  r.dk = output(in, args.k->shape(), poison);
  r.dv = output(in, args.v->shape(), poison);
  r.dbeta = output(DType::fp32, args.beta->shape(), poison);
  detail::launch_chunk_wy_bwd(args.k->data(), args.v->data(), f32(args.beta), f32(st.g_cum),
                              f32(st.A), f32(dw), f32(dv2), f32(dk_qkw), r.dk.data(), r.dv.data(),
                              f32(r.dbeta), f32(dG), t, d);
  r.dg = output(DType::fp32, args.g->shape(), poison);
  detail::launch_chunk_local_cumsum_reverse(f32(dG), f32(r.dg), t, d);
  if (!opts.return_stages)
    r.dh = DeviceArray();
  return r;
}

namespace detail {

namespace {

/// How the fused kernel copies its keys' and A's tiles, from RULEPROOF_FUSED_COPIES in the
/// environment: `tma` (the default: by the Tensor Memory Accelerator) or `threads` (cp.async, 16
/// bytes a thread of a warpgroup, as every other tile).
bool fused_copies_by_tma() {
  static const bool tma = !other_form("RULEPROOF_FUSED_COPIES", "tma", "threads");
  return tma;
}

/// Who issues the fused kernel's copies of the keys and A by the Tensor Memory Accelerator, from
/// RULEPROOF_FUSED_TMA in the environment: `warps` (the default: the first lane of each of the
/// first WY warpgroup's warps, a quarter of the boxes each) or `thread` (its first thread, every
/// box).
bool fused_tma_by_one_thread() {
  static const bool one = other_form("RULEPROOF_FUSED_TMA", "warps", "thread");
  return one;
}

/// RULEPROOF_FUSED_TIMELINE=FILE in the environment: each fused forward (a diagnostic) records
/// its timeline (DeltaFusedPass::timeline) and appends it to FILE, waiting for its kernel to end:
/// a line of the FusedEvent names, then a line a chunk reached, its index and block (0, 0, 0)'s SM
/// cycles at each event since the block began ("nan" for an event not reached).
const char *fused_timeline_path() {
  static const char *path = [] {
    const char *p = std::getenv("RULEPROOF_FUSED_TIMELINE");
    return p && *p ? p : nullptr;
  }();
  return path;
}
void append_timeline(const DeviceArray &timeline, const char *path) {
  const std::vector<float> cycles = timeline.download();
  std::ofstream out(path, std::ios::app);
  if (!out)
    throw std::runtime_error(std::string("RULEPROOF_FUSED_TIMELINE: cannot open ") + path);
  out << "chunk";
  for (const char *name : detail::fused_event_names)
    out << ' ' << name;
  out << '\n';
  for (int c = 0; c < detail::fused_timeline_chunks; ++c) {
    const float *row = &cycles[static_cast<std::size_t>(c) * detail::fused_timeline_events];
    bool reached = false;
    for (int e = 0; e < detail::fused_timeline_events; ++e)
      reached = reached || !std::isnan(row[e]);
    if (!reached)
      continue;
    out << c;
    for (int e = 0; e < detail::fused_timeline_events; ++e)
      out << ' ' << row[e];
    out << '\n';
  }
  if (!out)
    throw std::runtime_error(std::string("RULEPROOF_FUSED_TIMELINE: cannot write ") + path);
}

} // namespace

DeltaFusedPass fused_pass(const DeviceArray *q, const DeviceArray *k, const DeviceArray *v,
                          const DeviceArray *g, const DeviceArray *beta, const DeviceArray *h0,
                          DeviceArray &timeline) {
  DeltaFusedPass p;
  p.tma = fused_copies_by_tma();
  p.tma_thread = fused_tma_by_one_thread();
  p.rows = static_cast<long>(k->shape()[0] * k->shape()[1]);
  p.q = q->data();
  p.k = k->data();
  p.v = v->data();
  p.g = f32(g);
  p.beta = f32(beta);
  p.s0 = f32(h0);
  if (fused_timeline_path()) {
    timeline =
        output(DType::fp32,
               {std::size_t(fused_timeline_chunks), std::size_t(fused_timeline_events)}, true);
    p.timeline = f32(timeline);
  }
  return p;
}

void append_fused_timeline(const DeltaFusedPass &p, const DeviceArray &timeline) {
  if (p.timeline)
    append_timeline(timeline, fused_timeline_path());
}

} // namespace detail
} // namespace ruleproof::gpu
