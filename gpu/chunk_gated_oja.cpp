// ruleproof: the host side of the chunkwise gated_oja kernels: shape checks, buffers, and the
// kernels' order (gpu/chunk_gated_oja.cu says why each stage is what it is), through the delta
// rules' kernels with keys and values exchanged (dims `swapped`): forward chunk_local_cumsum,
// chunk_wy_fwd, chunk_delta_fwd_h, then chunk_oja_fwd_o; backward the same stages,
// chunk_bwd_dv_local, chunk_bwd_dhu, chunk_bwd_dqkwg, chunk_wy_bwd on q' = dO, dO' = q,
// chunk_fwd_o on q' = dO for dq, chunk_local_cumsum_reverse; states transposed between
// gated_oja's [K, V] and the delta kernels' [V, K]. On the tensor-core path, kda's tensor-core
// kernels on the same exchanged arguments (chunk_delta_tc_states, chunk_delta_tc_bwd_with_output),
// then the output of gpu/chunk_gated_oja_tc.cu.
#include "chunk_gated_oja.hpp"

#include <cmath>

#include "chunk_delta.hpp" // chunk_delta_tc_states, chunk_delta_tc_bwd_with_output
#include "detail/delta_launch.hpp"
#include "detail/gated_oja_launch.hpp"

namespace ruleproof::gpu {

namespace {

using detail::ChunkTable;
using detail::dims_of;
using detail::f32;
using detail::output;
using detail::spec_of;

/// The sizes as the delta rules' kernels see gated_oja: keys and values exchanged (the gate,
/// per value, is their per-key gate: G = V = their K).
detail::ChunkDims swapped(detail::ChunkDims d) {
  std::swap(d.K, d.V);
  return d;
}

/// x [M, H, X, Y] transposed to a fresh [M, H, Y, X] buffer (empty stays empty).
DeviceArray transposed(const DeviceArray *x, bool poison) {
  if (!x || x->empty())
    return DeviceArray();
  const Shape &s = x->shape();
  DeviceArray y = output(DType::fp32, {s[0], s[1], s[3], s[2]}, poison);
  detail::launch_transpose_states(f32(x), f32(y), static_cast<int>(s[0]), static_cast<int>(s[1]),
                                  static_cast<int>(s[2]), static_cast<int>(s[3]));
  return y;
}

/// Every stage of gated_oja's forward but the output, the states in the delta kernels'
/// layout [., H, V, K] (h_vk, and ht_vk when asked).
struct OjaStages {
  DeviceArray g_cum, A0, A, w, u, h_vk, k_new, ht_vk;
};
OjaStages oja_stages(const GatedOjaArgs &args, const ChunkTable &table, const detail::ChunkDims &d,
                     const ChunkShapes &s, bool with_ht, bool poison) {
  const std::size_t C = kernel_chunk_size;
  const detail::ChunkDims dk = swapped(d);
  OjaStages st;
  st.g_cum = output(DType::fp32, args.g->shape(), poison);
  st.A0 = output(DType::fp32, {s.B, s.T, s.H, C}, poison);
  st.A = output(DType::fp32, {s.B, s.T, s.H, C}, poison);
  st.w = output(DType::fp32, {s.B, s.T, s.H, s.V}, poison);
  st.u = output(DType::fp32, {s.B, s.T, s.H, s.K}, poison);
  st.h_vk = output(DType::fp32, {s.NC, s.H, s.V, s.K}, poison);
  st.k_new = output(DType::fp32, {s.B, s.T, s.H, s.K}, poison);
  if (with_ht)
    st.ht_vk = output(DType::fp32, {s.N, s.H, s.V, s.K}, poison);
  const DeviceArray h0_vk = transposed(args.h0, poison);
  const detail::DeviceChunkTable t = table.device();
  detail::launch_chunk_local_cumsum(f32(args.g), f32(st.g_cum), t, dk);
  detail::launch_chunk_wy_fwd(args.v->data(), args.k->data(), f32(args.beta), f32(st.g_cum),
                              f32(st.A0), f32(st.A), f32(st.w), f32(st.u), t, dk);
  detail::launch_chunk_delta_fwd_h(args.v->data(), f32(st.w), f32(st.u), f32(st.g_cum), f32(&h0_vk),
                                   f32(st.h_vk), f32(st.k_new), with_ht ? f32(st.ht_vk) : nullptr,
                                   t, dk);
  return st;
}

ChunkShapes oja_shapes_of(const GatedOjaArgs &args, const ChunkOptions &opts,
                          const DeviceArray *d_o = nullptr, const DeviceArray *d_ht = nullptr) {
  if (!args.q || !args.k || !args.v || !args.g || !args.beta)
    throw InputError(!args.q   ? "q"
                     : !args.k ? "k"
                     : !args.v ? "v"
                     : !args.g ? "g"
                               : "beta",
                     "missing");
  return check_gated_oja_shapes(args.q->spec(), args.k->spec(), args.v->spec(), args.g->spec(),
                                args.beta->spec(), spec_of(args.h0), opts, spec_of(d_o),
                                spec_of(d_ht));
}

/// The options of kda's kernels run on gated_oja's arguments: gated_oja's scale (its own K's).
ChunkOptions delta_options(const ChunkOptions &opts, const ChunkShapes &s) {
  ChunkOptions o = opts;
  o.scale = opts.scale ? *opts.scale : 1.0 / std::sqrt(double(s.K));
  return o;
}

/// gated_oja's forward on tensor cores: kda's tensor-core forward without its output on keys and
/// values exchanged (k' = v, v' = k; q' is v, whose scores are not used), then its own output
/// (gpu/chunk_gated_oja_tc.cu).
GatedOjaForward tensor_core_forward(const GatedOjaArgs &args, const ChunkTable &table,
                                    const detail::ChunkDims &d, const ChunkShapes &s,
                                    const ChunkOptions &opts) {
  const bool poison = opts.poison_outputs;
  const DeviceArray h0_vk = transposed(args.h0, poison);
  const DeltaArgs a{args.v, args.v, args.k, args.g, args.beta, h0_vk.empty() ? nullptr : &h0_vk};
  DeltaTcStates st = chunk_delta_tc_states(a, delta_options(opts, s));
  GatedOjaForward r;
  r.o = output(args.q->dtype(), {s.B, s.T, s.H, s.V}, poison);
  detail::launch_chunk_oja_fwd_o_tc(args.q->data(), args.v->data(), st.v_new.data(), st.h.data(),
                                    f32(args.g), r.o.data(), table.device(), d);
  r.final_state = transposed(&st.final_state, poison);
  r.saved = std::move(st.saved);
  if (opts.return_stages) {
    r.g_cum = std::move(st.stages.g_cum);
    r.A0 = std::move(st.stages.A0);
    r.A = std::move(st.stages.A);
    r.w = std::move(st.stages.w);
    r.u = std::move(st.stages.u);
    r.h = transposed(&st.stages.h, poison);
    r.k_new = std::move(st.stages.v_new);
  }
  return r;
}

/// gated_oja's backward on tensor cores: kda's on q' = dO, k' = v, v' = k, dO' = q
/// (gpu/chunk_gated_oja.cu says why), whose forward pass gives dq, kda's output on q' = dO; from
/// the forward's A when `saved` holds it (A is of k' = v, g and beta alone).
GatedOjaGrads tensor_core_backward(const GatedOjaArgs &args, const DeviceArray &d_o,
                                   const DeviceArray *d_ht, const ChunkShapes &s,
                                   const ChunkOptions &opts, const DeltaSaved *saved) {
  const bool poison = opts.poison_outputs;
  const DeviceArray h0_vk = transposed(args.h0, poison);
  const DeviceArray dht_vk = transposed(d_ht, poison);
  const DeltaArgs a{&d_o, args.v, args.k, args.g, args.beta, h0_vk.empty() ? nullptr : &h0_vk};
  GatedOjaGrads r;
  DeltaGrads g = chunk_delta_tc_bwd_with_output(a, *args.q, dht_vk.empty() ? nullptr : &dht_vk,
                                                delta_options(opts, s), r.dq, saved);
  r.dk = std::move(g.dv);
  r.dv = std::move(g.dk);
  r.dg = std::move(g.dg);
  r.dbeta = std::move(g.dbeta);
  r.dh0 = transposed(&g.dh0, poison);
  if (opts.return_stages)
    r.dh = transposed(&g.dh, poison);
  return r;
}

} // namespace

ChunkShapes check_gated_oja_shapes(const ArraySpec &q, const ArraySpec &k, const ArraySpec &v,
                                   const ArraySpec &g, const ArraySpec &beta, const ArraySpec *h0,
                                   const ChunkOptions &opts, const ArraySpec *d_o,
                                   const ArraySpec *d_ht) {
  const ChunkShapes s = check_chunk_shapes(GateKind::value, q, k, v, g, h0, opts, d_o, d_ht);
  detail::expect("beta", beta, DType::fp32, {s.B, s.T, s.H});
  return s;
}

GatedOjaForward chunk_gated_oja_fwd(const GatedOjaArgs &args, const ChunkOptions &opts) {
  const ChunkShapes s = oja_shapes_of(args, opts);
  const detail::ChunkDims d = dims_of(GateKind::value, s, opts, args.q->dtype());
  const ChunkTable table(s.B, s.T, opts.cu_seqlens);
  if (opts.path == KernelPath::tensor_cores)
    return tensor_core_forward(args, table, d, s, opts);
  const bool poison = opts.poison_outputs;
  OjaStages st = oja_stages(args, table, d, s, opts.output_final_state, poison);
  GatedOjaForward r;
  r.o = output(args.q->dtype(), {s.B, s.T, s.H, s.V}, poison);
  detail::launch_chunk_oja_fwd_o(args.q->data(), args.v->data(), f32(st.k_new), f32(st.g_cum),
                                 f32(st.h_vk), r.o.data(), table.device(), d);
  r.final_state = transposed(&st.ht_vk, poison);
  if (opts.return_stages) {
    r.g_cum = std::move(st.g_cum);
    r.A0 = std::move(st.A0);
    r.A = std::move(st.A);
    r.w = std::move(st.w);
    r.u = std::move(st.u);
    r.h = transposed(&st.h_vk, poison);
    r.k_new = std::move(st.k_new);
  }
  return r;
}

GatedOjaGrads chunk_gated_oja_bwd(const GatedOjaArgs &args, const DeviceArray &d_o,
                                  const DeviceArray *d_ht, const ChunkOptions &opts,
                                  const DeltaSaved *saved) {
  const ChunkShapes s = oja_shapes_of(args, opts, &d_o, d_ht);
  if (saved && !saved->empty()) {
    check_delta_saved(s, args.q->dtype(), nullptr, saved->A.spec(), opts);
    if (!saved->Aqk.empty()) // the scores of a delta rule's forward, not of gated_oja's
      throw InputError("saved.Aqk", "is not gated_oja's: its forward keeps A alone");
  }
  if (opts.path == KernelPath::tensor_cores)
    return tensor_core_backward(args, d_o, d_ht, s, opts, saved);
  const detail::ChunkDims d = dims_of(GateKind::value, s, opts, args.q->dtype());
  const detail::ChunkDims dk = swapped(d);
  const ChunkTable table(s.B, s.T, opts.cu_seqlens);
  const detail::DeviceChunkTable t = table.device();
  const bool poison = opts.poison_outputs;
  const DType in = args.q->dtype();
  OjaStages st = oja_stages(args, table, d, s, false, poison);
  // kda's backward on q' = dO, k' = v, v' = k, dO' = q (chunk_gated_oja.cu says why)
  DeviceArray dk_new = output(DType::fp32, {s.B, s.T, s.H, s.K}, poison); // kda's dv2
  detail::launch_chunk_bwd_dv_local(d_o.data(), args.v->data(), f32(st.g_cum), args.q->data(),
                                    f32(dk_new), t, dk);
  const DeviceArray dht_vk = transposed(d_ht, poison);
  DeviceArray dh_vk = output(DType::fp32, {s.NC, s.H, s.V, s.K}, poison);
  const bool with_dh0 = args.h0 && !args.h0->empty();
  DeviceArray dh0_vk;
  if (with_dh0)
    dh0_vk = output(DType::fp32, {s.N, s.H, s.V, s.K}, poison);
  detail::launch_chunk_bwd_dhu(d_o.data(), args.v->data(), f32(st.w), f32(st.g_cum), args.q->data(),
                               f32(&dht_vk), f32(dk_new), f32(dh_vk),
                               with_dh0 ? f32(dh0_vk) : nullptr, t, dk);
  DeviceArray d_do = output(in, d_o.shape(), poison); // kda's dq': the gradient of dO, unused
  DeviceArray dv_qkw = output(DType::fp32, {s.B, s.T, s.H, s.V}, poison);
  DeviceArray dw = output(DType::fp32, {s.B, s.T, s.H, s.V}, poison);
  DeviceArray dG = output(DType::fp32, {s.B, s.T, s.H, s.V}, poison);
  detail::launch_chunk_bwd_dqkwg(d_o.data(), args.v->data(), f32(st.k_new), f32(st.g_cum),
                                 f32(st.h_vk), args.q->data(), f32(dh_vk), f32(dk_new), d_do.data(),
                                 f32(dv_qkw), f32(dw), f32(dG), t, dk);
  GatedOjaGrads r;
  r.dk = output(in, args.k->shape(), poison);
  r.dv = output(in, args.v->shape(), poison);
  r.dbeta = output(DType::fp32, args.beta->shape(), poison);
  detail::launch_chunk_wy_bwd(args.v->data(), args.k->data(), f32(args.beta), f32(st.g_cum),
                              f32(st.A), f32(dw), f32(dk_new), f32(dv_qkw), r.dv.data(),
                              r.dk.data(), f32(r.dbeta), f32(dG), t, dk);
  r.dq = output(in, args.q->shape(), poison); // kda's output on q' = dO
  detail::launch_chunk_delta_fwd_o(d_o.data(), args.v->data(), f32(st.k_new), f32(st.g_cum),
                                   f32(st.h_vk), r.dq.data(), t, dk);
  r.dg = output(DType::fp32, args.g->shape(), poison);
  detail::launch_chunk_local_cumsum_reverse(f32(dG), f32(r.dg), t, dk);
  r.dh0 = transposed(&dh0_vk, poison);
  if (opts.return_stages)
    r.dh = transposed(&dh_vk, poison);
  return r;
}

} // namespace ruleproof::gpu
