// ruleproof: the host side of the chunkwise GLA kernels: shape checks, the chunk table, the
// buffers, and the kernels' order. Forward on CUDA cores: chunk_local_cumsum, chunk_fwd_h,
// chunk_fwd_o; on tensor cores (KernelPath::tensor_cores): chunk_gla_scores_tc (every chunk at
// once), then chunk_gla_fwd_tc (the states and the output, fused); simple_gla's forward without
// stages on compute capability 9.0, chunk_delta_held_tc's plain form alone (the scores, the states
// and the output in one kernel on warpgroup MMA, the state held in registers;
// RULEPROOF_GLA_FORWARD=fused runs chunk_delta_fused_tc's plain form, =two the two kernels).
// Backward (CUDA cores, either path): the first two stages again (g_cum and h, not stored by the
// forward), then chunk_bwd_dh, chunk_bwd_dqkv, chunk_bwd_dg.
#include "chunk_gla.hpp"

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

#include "detail/delta_launch.hpp" // launch_chunk_gla_fused_tc, the fused kernel's plain form
#include "detail/gla_launch.hpp"

namespace ruleproof::gpu {

namespace {

using detail::ChunkTable;
using detail::dims_of;
using detail::f32;
using detail::output;

/// g_cum, the per-chunk states h and (when asked) the final state: the first two stages.
struct States {
  DeviceArray g_cum, h, ht;
};
States forward_states(const GlaArgs &args, const ChunkTable &table, const detail::ChunkDims &d,
                      const ChunkShapes &s, bool with_ht, bool poison) {
  States st;
  st.g_cum = output(DType::fp32, args.g->shape(), poison);
  st.h = output(DType::fp32, {s.NC, s.H, s.K, s.V}, poison);
  if (with_ht)
    st.ht = output(DType::fp32, {s.N, s.H, s.K, s.V}, poison);
  const detail::DeviceChunkTable t = table.device();
  detail::launch_chunk_local_cumsum(f32(args.g), f32(st.g_cum), t, d);
  detail::launch_chunk_fwd_h(args.k->data(), args.v->data(), f32(st.g_cum), f32(args.h0), f32(st.h),
                             with_ht ? f32(st.ht) : nullptr, t, d);
  return st;
}

/// What the tensor-core path's scores kernel passes on (gpu/chunk_gla_tc.cu): the scores and
/// the decayed factors in the input type (the operands of the products that read them), and the
/// chunks' decays.
/// With `row_factors` (a scalar gate's forward) each row's e^{g_cum} and e^{gl - g_cum} in fp32 in
/// place of qd and kd.
struct TcScores {
  DeviceArray A16, qd, kd, decay, row_up, row_to_end;
  detail::TcScratch scratch() {
    return {A16.data(), qd.data(), kd.data(), f32(decay), f32(row_up), f32(row_to_end)};
  }
};
TcScores tensor_core_scores(const GlaArgs &args, const ChunkTable &table,
                            const detail::ChunkDims &d, const ChunkShapes &s, bool poison, float *A,
                            float *g_cum, bool row_factors = false) {
  TcScores r;
  r.A16 = output(args.q->dtype(), {s.B, s.T, s.H, std::size_t(kernel_chunk_size)}, poison);
  if (row_factors) {
    r.row_up = output(DType::fp32, {s.B, s.T, s.H}, poison);
    r.row_to_end = output(DType::fp32, {s.B, s.T, s.H}, poison);
  } else {
    r.qd = output(args.q->dtype(), args.q->shape(), poison);
    r.kd = output(args.q->dtype(), args.k->shape(), poison);
  }
  r.decay = output(DType::fp32, {s.NC, s.H, std::size_t(d.G)}, poison);
  detail::launch_chunk_gla_scores_tc(args.q->data(), args.k->data(), f32(args.g), r.scratch(), A,
                                     g_cum, table.device(), d);
  return r;
}

/// How simple_gla's tensor-core forward without stages runs, from RULEPROOF_GLA_FORWARD in the
/// environment: `held` (the kernel with the state held in registers, launch_chunk_gla_held_tc; the
/// default where the device runs sm_90a code), `fused` (the plain form of the four-warpgroup
/// kernel, launch_chunk_gla_fused_tc) or `two` (the scores kernel, then the sequential kernel;
/// always where the device does not run sm_90a code, and for a call that asks for stages). Anything
/// else is an error, on any device.
enum class GlaForwardForm { two, fused, held };
GlaForwardForm gla_forward_form() {
  static const GlaForwardForm form = [] {
    const char *value = std::getenv("RULEPROOF_GLA_FORWARD");
    const std::string_view name = value ? value : "";
    GlaForwardForm f = GlaForwardForm::held;
    if (name == "two")
      f = GlaForwardForm::two;
    else if (name == "fused")
      f = GlaForwardForm::fused;
    else if (!name.empty() && name != "held")
      throw std::invalid_argument("RULEPROOF_GLA_FORWARD: '" + std::string(name) +
                                  "' is none of fused, held, two");
    return detail::runs_sm90a() ? f : GlaForwardForm::two;
  }();
  return form;
}

/// simple_gla's forward in one kernel (gla_forward_form: the fused kernel's plain form, or the held
/// kernel's): the output and the final state.
void fused_forward(const GlaArgs &args, const detail::DeviceChunkTable &t,
                   const detail::ChunkDims &d, GlaForward &r) {
  DeviceArray timeline; // RULEPROOF_FUSED_TIMELINE, a diagnostic
  detail::DeltaFusedPass p =
      detail::fused_pass(args.q, args.k, args.v, args.g, nullptr, args.h0, timeline);
  p.o = r.o.data();
  p.s_end = r.final_state.empty() ? nullptr : f32(r.final_state);
  if (gla_forward_form() == GlaForwardForm::held)
    detail::launch_chunk_gla_held_tc(p, t, d);
  else
    detail::launch_chunk_gla_fused_tc(p, t, d);
  detail::append_fused_timeline(p, timeline);
}

/// The forward on tensor cores (gpu/chunk_gla_tc.cu): the scores, then the states and the
/// output fused (simple_gla's without stages in one kernel where gla_forward_form says so); the
/// stages written when asked for.
GlaForward tensor_core_forward(const GlaArgs &args, const ChunkTable &table,
                               const detail::ChunkDims &d, const ChunkShapes &s,
                               const ChunkOptions &opts) {
  const bool poison = opts.poison_outputs, stages = opts.return_stages;
  GlaForward r;
  r.o = output(args.q->dtype(), {s.B, s.T, s.H, s.V}, poison);
  if (opts.output_final_state)
    r.final_state = output(DType::fp32, {s.N, s.H, s.K, s.V}, poison);
  if (stages) {
    r.g_cum = output(DType::fp32, args.g->shape(), poison);
    r.h = output(DType::fp32, {s.NC, s.H, s.K, s.V}, poison);
    r.A = output(DType::fp32, {s.B, s.T, s.H, std::size_t(kernel_chunk_size)}, poison);
  }
  const bool row_factors = d.G == 1; // simple_gla: q and k undecayed, scaled in fp32
  if (row_factors && !stages && gla_forward_form() != GlaForwardForm::two) {
    fused_forward(args, table.device(), d, r);
    return r;
  }
  TcScores sc = tensor_core_scores(args, table, d, s, poison, stages ? f32(r.A) : nullptr,
                                   stages ? f32(r.g_cum) : nullptr, row_factors);
  detail::TcStatePass p;
  p.left = row_factors ? args.k->data() : sc.kd.data();
  p.right = args.v->data();
  p.decay = f32(sc.decay);
  p.s0 = f32(args.h0);
  p.o = r.o.data();
  p.qd = row_factors ? args.q->data() : sc.qd.data();
  p.row_up = f32(sc.row_up);
  p.row_to_end = f32(sc.row_to_end);
  p.A16 = sc.A16.data();
  p.s_end = opts.output_final_state ? f32(r.final_state) : nullptr;
  p.s_chunks = stages ? f32(r.h) : nullptr;
  detail::launch_chunk_gla_state_tc(p, table.device(), d);
  return r;
}

/// The backward on tensor cores: the scores and the states h again (h in the input type, not
/// the output), the state gradients dh backwards (in the input type; fp32 as well when the
/// stages are asked for), dq, dk, dv and dG of every chunk (gpu/chunk_gla_bwd_tc.cu), then dg.
GlaGrads tensor_core_backward(const GlaArgs &args, const DeviceArray &d_o, const DeviceArray *d_ht,
                              const ChunkTable &table, const detail::ChunkDims &d,
                              const ChunkShapes &s, const ChunkOptions &opts) {
  const bool poison = opts.poison_outputs;
  const bool with_dht = d_ht && !d_ht->empty(), with_dh0 = args.h0 && !args.h0->empty();
  const detail::DeviceChunkTable t = table.device();
  TcScores sc = tensor_core_scores(args, table, d, s, poison, nullptr, nullptr);
  DeviceArray h16 = output(args.q->dtype(), {s.NC, s.H, s.K, s.V}, poison);
  DeviceArray ht; // the final state is needed for dg's last-row term only when dht is given
  if (with_dht)
    ht = output(DType::fp32, {s.N, s.H, s.K, s.V}, poison);
  detail::TcStatePass fwd;
  fwd.left = sc.kd.data();
  fwd.right = args.v->data();
  fwd.decay = f32(sc.decay);
  fwd.s0 = f32(args.h0);
  fwd.s_end = with_dht ? f32(ht) : nullptr;
  fwd.s_chunks16 = h16.data();
  detail::launch_chunk_gla_state_tc(fwd, t, d);

  GlaGrads r;
  if (opts.return_stages)
    r.dh = output(DType::fp32, {s.NC, s.H, s.K, s.V}, poison);
  if (with_dh0)
    r.dh0 = output(DType::fp32, {s.N, s.H, s.K, s.V}, poison);
  DeviceArray dh16 = output(args.q->dtype(), {s.NC, s.H, s.K, s.V}, poison);
  detail::TcStatePass bwd;
  bwd.left = sc.qd.data();
  bwd.right = d_o.data();
  bwd.decay = f32(sc.decay);
  bwd.s0 = with_dht ? f32(d_ht) : nullptr;
  bwd.reverse = true;
  bwd.s_end = with_dh0 ? f32(r.dh0) : nullptr;
  bwd.s_chunks = opts.return_stages ? f32(r.dh) : nullptr;
  bwd.s_chunks16 = dh16.data();
  detail::launch_chunk_gla_state_tc(bwd, t, d);

  r.dq = output(args.q->dtype(), args.q->shape(), poison);
  r.dk = output(args.q->dtype(), args.k->shape(), poison);
  r.dv = output(args.q->dtype(), args.v->shape(), poison);
  DeviceArray dG = output(DType::fp32, {s.B, s.T, s.H, std::size_t(d.G)}, poison);
  detail::launch_chunk_gla_bwd_tc(args.q->data(), args.k->data(), args.v->data(), f32(args.g),
                                  d_o.data(), sc.scratch(), h16.data(), dh16.data(), r.dq.data(),
                                  r.dk.data(), r.dv.data(), f32(dG), t, d);
  r.dg = output(DType::fp32, args.g->shape(), poison);
  DeviceArray chunk_sums = output(DType::fp32, {2, s.NC, s.H, std::size_t(d.G)}, poison);
  detail::launch_chunk_gla_bwd_dg_tc(f32(dG), with_dht ? f32(ht) : nullptr, f32(d_ht), f32(r.dg),
                                     f32(chunk_sums), t, d);
  return r;
}

void expect_args(const GlaArgs &args) {
  if (!args.q || !args.k || !args.v || !args.g)
    throw InputError(!args.q ? "q" : !args.k ? "k" : !args.v ? "v" : "g", "missing");
}

} // namespace

GlaForward chunk_gla_fwd(GateKind gate, const GlaArgs &args, const ChunkOptions &opts) {
  expect_args(args);
  const ChunkShapes s =
      check_chunk_shapes(gate, args.q->spec(), args.k->spec(), args.v->spec(), args.g->spec(),
                         args.h0 ? &args.h0->spec() : nullptr, opts);
  const detail::ChunkDims d = dims_of(gate, s, opts, args.q->dtype());
  const ChunkTable table(s.B, s.T, opts.cu_seqlens);
  const bool poison = opts.poison_outputs;
  if (opts.path == KernelPath::tensor_cores)
    return tensor_core_forward(args, table, d, s, opts);
  States st = forward_states(args, table, d, s, opts.output_final_state, poison);
  GlaForward r;
  r.o = output(args.q->dtype(), {s.B, s.T, s.H, s.V}, poison);
  if (opts.return_stages)
    r.A = output(DType::fp32, {s.B, s.T, s.H, std::size_t(kernel_chunk_size)}, poison);
  detail::launch_chunk_fwd_o(args.q->data(), args.k->data(), args.v->data(), f32(st.g_cum),
                             f32(st.h), r.o.data(), opts.return_stages ? f32(r.A) : nullptr,
                             table.device(), d);
  r.final_state = std::move(st.ht);
  if (opts.return_stages) {
    r.g_cum = std::move(st.g_cum);
    r.h = std::move(st.h);
  }
  return r;
}

GlaGrads chunk_gla_bwd(GateKind gate, const GlaArgs &args, const DeviceArray &d_o,
                       const DeviceArray *d_ht, const ChunkOptions &opts) {
  expect_args(args);
  const ChunkShapes s = check_chunk_shapes(gate, args.q->spec(), args.k->spec(), args.v->spec(),
                                           args.g->spec(), args.h0 ? &args.h0->spec() : nullptr,
                                           opts, &d_o.spec(), d_ht ? &d_ht->spec() : nullptr);
  const detail::ChunkDims d = dims_of(gate, s, opts, args.q->dtype());
  const ChunkTable table(s.B, s.T, opts.cu_seqlens);
  if (opts.path == KernelPath::tensor_cores)
    return tensor_core_backward(args, d_o, d_ht, table, d, s, opts);
  const detail::DeviceChunkTable t = table.device();
  const bool poison = opts.poison_outputs;
  const bool with_dht = d_ht && !d_ht->empty();
  // the final state is needed for dg's last-row term only when dht is given
  States st = forward_states(args, table, d, s, with_dht, poison);
  GlaGrads r;
  r.dh = output(DType::fp32, {s.NC, s.H, s.K, s.V}, poison);
  const bool with_dh0 = args.h0 && !args.h0->empty();
  if (with_dh0)
    r.dh0 = output(DType::fp32, {s.N, s.H, s.K, s.V}, poison);
  detail::launch_chunk_bwd_dh(args.q->data(), d_o.data(), f32(st.g_cum), f32(d_ht), f32(r.dh),
                              with_dh0 ? f32(r.dh0) : nullptr, t, d);
  r.dq = output(args.q->dtype(), args.q->shape(), poison);
  r.dk = output(args.q->dtype(), args.k->shape(), poison);
  r.dv = output(args.q->dtype(), args.v->shape(), poison);
  DeviceArray dG = output(DType::fp32, {s.B, s.T, s.H, s.K}, poison);
  detail::launch_chunk_bwd_dqkv(args.q->data(), args.k->data(), args.v->data(), f32(st.g_cum),
                                f32(st.h), d_o.data(), f32(r.dh), r.dq.data(), r.dk.data(),
                                r.dv.data(), f32(dG), t, d);
  r.dg = output(DType::fp32, args.g->shape(), poison);
  detail::launch_chunk_bwd_dg(f32(dG), with_dht ? f32(st.ht) : nullptr, f32(d_ht), f32(r.dg), t, d);
  if (!opts.return_stages)
    r.dh = DeviceArray();
  return r;
}

} // namespace ruleproof::gpu
