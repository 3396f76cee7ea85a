// ruleproof: the host side of the chunkwise dplr kernels: shape checks, buffers, and the
// kernels' order (gpu/chunk_dplr.cu says why each stage is what it is). Forward:
// chunk_local_cumsum, chunk_dplr_fwd_wy (chunk_dplr_fwd_intra, solve_tril, recompute_w_c),
// chunk_dplr_fwd_h, chunk_dplr_fwd_o. Backward: the forward's stages again, then
// chunk_bwd_dv_local and chunk_bwd_dhu (the delta rules' kernels, with b, the engine's a, in
// place of k), chunk_dplr_bwd_wy, chunk_dplr_bwd_dqk, chunk_local_cumsum_reverse. The forward on
// tensor cores (KernelPath::tensor_cores): chunk_dplr_wy_tc, chunk_gla_state_tc with w and the
// second term kd^T v, chunk_dplr_fwd_o_tc (gpu/chunk_dplr_tc.cu); the backward on tensor cores:
// chunk_dplr_wy_tc, chunk_gla_state_tc forwards and backwards, chunk_dplr_bwd_wy_tc,
// chunk_dplr_bwd_dqk_tc.
#include "chunk_dplr.hpp"

#include "detail/delta_launch.hpp"
#include "detail/dplr_launch.hpp"

namespace ruleproof::gpu {

namespace {

using detail::ChunkTable;
using detail::dims_of;
using detail::f32;
using detail::output;
using detail::spec_of;

/// Every stage of dplr's forward but the output, and (when asked) the final state.
struct DplrStages {
  DeviceArray g_cum, A_qk, A_qa, A_ba, A_bk, E, w, c, h, v2, ht;
};
DplrStages dplr_stages(const DplrArgs &args, const ChunkTable &table, const detail::ChunkDims &d,
                       const ChunkShapes &s, bool with_ht, bool poison) {
  const std::size_t C = kernel_chunk_size;
  const Shape scores{s.B, s.T, s.H, C};
  DplrStages st;
  st.g_cum = output(DType::fp32, args.gk->shape(), poison);
  st.A_qk = output(DType::fp32, scores, poison);
  st.A_qa = output(DType::fp32, scores, poison);
  st.A_ba = output(DType::fp32, scores, poison);
  st.A_bk = output(DType::fp32, scores, poison);
  st.E = output(DType::fp32, scores, poison);
  st.w = output(DType::fp32, {s.B, s.T, s.H, s.K}, poison);
  st.c = output(DType::fp32, {s.B, s.T, s.H, s.V}, poison);
  st.h = output(DType::fp32, {s.NC, s.H, s.K, s.V}, poison);
  st.v2 = output(DType::fp32, {s.B, s.T, s.H, s.V}, poison);
  if (with_ht)
    st.ht = output(DType::fp32, {s.N, s.H, s.K, s.V}, poison);
  const detail::DeviceChunkTable t = table.device();
  detail::launch_chunk_local_cumsum(f32(args.gk), f32(st.g_cum), t, d);
  detail::launch_chunk_dplr_fwd_wy(args.q->data(), args.k->data(), args.v->data(), args.a->data(),
                                   args.b->data(), f32(st.g_cum), f32(st.A_qk), f32(st.A_qa),
                                   f32(st.A_ba), f32(st.A_bk), f32(st.E), f32(st.w), f32(st.c), t,
                                   d);
  detail::launch_chunk_dplr_fwd_h(args.k->data(), args.v->data(), args.b->data(), f32(st.w),
                                  f32(st.c), f32(st.g_cum), f32(args.h0), f32(st.h), f32(st.v2),
                                  with_ht ? f32(st.ht) : nullptr, t, d);
  return st;
}

ChunkShapes dplr_shapes_of(const DplrArgs &args, const ChunkOptions &opts,
                           const DeviceArray *d_o = nullptr, const DeviceArray *d_ht = nullptr) {
  if (!args.q || !args.k || !args.v || !args.a || !args.b || !args.gk)
    throw InputError(!args.q   ? "q"
                     : !args.k ? "k"
                     : !args.v ? "v"
                     : !args.a ? "a"
                     : !args.b ? "b"
                               : "gk",
                     "missing");
  return check_dplr_shapes(args.q->spec(), args.k->spec(), args.v->spec(), args.a->spec(),
                           args.b->spec(), args.gk->spec(), spec_of(args.h0), opts, spec_of(d_o),
                           spec_of(d_ht));
}

/// The tensor-core WY kernel's outputs, in the input type but for the decays (DplrTcScratch; -E,
/// A_bk, bl and bv only for the backward).
struct TcWy {
  DeviceArray A_qk, A_qa, qd, kd, ad, w, c, decay, mE, A_bk, bl, bv;
  detail::DplrTcScratch scratch() {
    const auto at = [](DeviceArray &x) { return x.empty() ? nullptr : x.data(); };
    return {at(A_qk), at(A_qa),   at(qd), at(kd),   at(ad), at(w),
            at(c),    f32(decay), at(mE), at(A_bk), at(bl), at(bv)};
  }
};
/// Runs the tensor-core WY kernel into new buffers (with those of the backward when asked).
TcWy tensor_core_wy(const DplrArgs &args, const detail::DeviceChunkTable &t,
                    const detail::ChunkDims &d, const ChunkShapes &s, bool poison,
                    const detail::DplrTcStages &st, bool for_backward) {
  const DType in = args.q->dtype();
  const Shape scores{s.B, s.T, s.H, kernel_chunk_size};
  TcWy r;
  r.A_qk = output(in, scores, poison);
  r.A_qa = output(in, scores, poison);
  r.qd = output(in, args.q->shape(), poison);
  r.kd = output(in, args.k->shape(), poison);
  r.ad = output(in, args.b->shape(), poison);
  r.w = output(in, args.k->shape(), poison);
  r.c = output(in, args.v->shape(), poison);
  r.decay = output(DType::fp32, {s.NC, s.H, s.K}, poison);
  if (for_backward) {
    r.mE = output(in, scores, poison);
    r.A_bk = output(in, scores, poison);
    r.bl = output(in, args.a->shape(), poison);
    r.bv = output(in, args.v->shape(), poison);
  }
  detail::launch_chunk_dplr_wy_tc(args.q->data(), args.k->data(), args.v->data(), args.a->data(),
                                  args.b->data(), f32(args.gk), r.scratch(), st, t, d);
  return r;
}

/// The sequential kernel forwards on the WY kernel's outputs (v2 = c - w h, the update ad^T v2 +
/// kd^T v), storing h at each chunk's start and v2 in the input type, and the stages and the
/// final state where given.
void tensor_core_states(const DplrArgs &args, TcWy &wy, const detail::DeviceChunkTable &t,
                        const detail::ChunkDims &d, DeviceArray &h16, DeviceArray &v2,
                        float *final_state, float *h_stage, float *v2_stage) {
  detail::TcStatePass p;
  p.left = wy.ad.data();
  p.right = wy.c.data();
  p.w = wy.w.data();
  p.left2 = wy.kd.data();
  p.right2 = args.v->data();
  p.decay = f32(wy.decay);
  p.s0 = f32(args.h0);
  p.s_chunks16 = h16.data();
  p.v_new16 = v2.data();
  p.s_end = final_state;
  p.s_chunks = h_stage;
  p.v_new = v2_stage;
  detail::launch_chunk_gla_state_tc(p, t, d);
}

/// dplr's forward on tensor cores (gpu/chunk_dplr_tc.cu): the WY kernel, the sequential kernel
/// (v2 = c - w h, the update ad^T v2 + kd^T v) storing h at each chunk's start and v2 in the
/// input type, then the output kernel; the stages written when asked for.
DplrForward tensor_core_forward(const DplrArgs &args, const ChunkTable &table,
                                const detail::ChunkDims &d, const ChunkShapes &s,
                                const ChunkOptions &opts) {
  const bool poison = opts.poison_outputs, stages = opts.return_stages;
  const DType in = args.q->dtype();
  const std::size_t C = kernel_chunk_size;
  const Shape scores{s.B, s.T, s.H, C};
  const detail::DeviceChunkTable t = table.device();
  DplrForward r;
  detail::DplrTcStages st;
  if (stages) {
    r.g_cum = output(DType::fp32, args.gk->shape(), poison);
    for (DeviceArray *x : {&r.A_qk, &r.A_qa, &r.A_ba, &r.A_bk, &r.E})
      *x = output(DType::fp32, scores, poison);
    r.w = output(DType::fp32, args.k->shape(), poison);
    r.c = output(DType::fp32, args.v->shape(), poison);
    r.h = output(DType::fp32, {s.NC, s.H, s.K, s.V}, poison);
    r.v2 = output(DType::fp32, args.v->shape(), poison);
    st = {f32(r.g_cum), f32(r.A_qk), f32(r.A_qa), f32(r.A_ba),
          f32(r.A_bk),  f32(r.E),    f32(r.w),    f32(r.c)};
  }
  TcWy wy = tensor_core_wy(args, t, d, s, poison, st, false);
  if (opts.output_final_state)
    r.final_state = output(DType::fp32, {s.N, s.H, s.K, s.V}, poison);
  DeviceArray h16 = output(in, {s.NC, s.H, s.K, s.V}, poison);
  DeviceArray v2 = output(in, args.v->shape(), poison);
  tensor_core_states(args, wy, t, d, h16, v2,
                     opts.output_final_state ? f32(r.final_state) : nullptr,
                     stages ? f32(r.h) : nullptr, stages ? f32(r.v2) : nullptr);
  r.o = output(in, {s.B, s.T, s.H, s.V}, poison);
  detail::launch_chunk_dplr_fwd_o_tc(args.v->data(), wy.scratch(), h16.data(), v2.data(),
                                     r.o.data(), t, d);
  return r;
}

/// dplr's backward on tensor cores: the WY kernel again (with -E, A_bk, bl, bv), the sequential
/// kernel forwards (h and v2) and backwards (left qd, right dO, w, dv2's left factor ad and scores
/// A_qa: dh after each chunk, dv2, dh0), all in the input type, then chunk_dplr_bwd_wy_tc and
/// chunk_dplr_bwd_dqk_tc (gpu/chunk_dplr_tc.cu).
DplrGrads tensor_core_backward(const DplrArgs &args, const DeviceArray &d_o,
                               const DeviceArray *d_ht, const ChunkTable &table,
                               const detail::ChunkDims &d, const ChunkShapes &s,
                               const ChunkOptions &opts) {
  const bool poison = opts.poison_outputs;
  const bool with_dht = d_ht && !d_ht->empty(), with_dh0 = args.h0 && !args.h0->empty();
  const DType in = args.q->dtype();
  const Shape scores{s.B, s.T, s.H, kernel_chunk_size}, rows{s.B, s.T, s.H};
  const detail::DeviceChunkTable t = table.device();
  TcWy wy = tensor_core_wy(args, t, d, s, poison, detail::DplrTcStages{}, true);
  DeviceArray h16 = output(in, {s.NC, s.H, s.K, s.V}, poison);
  DeviceArray v2 = output(in, args.v->shape(), poison);
  tensor_core_states(args, wy, t, d, h16, v2, nullptr, nullptr, nullptr);

  DplrGrads r;
  if (opts.return_stages)
    r.dh = output(DType::fp32, {s.NC, s.H, s.K, s.V}, poison);
  if (with_dh0)
    r.dh0 = output(DType::fp32, {s.N, s.H, s.K, s.V}, poison);
  DeviceArray dh16 = output(in, {s.NC, s.H, s.K, s.V}, poison);
  DeviceArray dv2 = output(in, args.v->shape(), poison);
  detail::launch_state_gradients_tc(
      wy.qd.data(), d_o.data(), wy.w.data(), wy.ad.data(), wy.A_qa.data(), f32(wy.decay),
      with_dht ? f32(d_ht) : nullptr, with_dh0 ? f32(r.dh0) : nullptr,
      opts.return_stages ? f32(r.dh) : nullptr, dh16.data(), dv2.data(), t, d);

  r.dv = output(in, args.v->shape(), poison);
  DeviceArray dO_h = output(DType::fp32, args.k->shape(), poison);
  DeviceArray v_dh = output(DType::fp32, args.k->shape(), poison);
  DeviceArray v2_dh = output(DType::fp32, args.k->shape(), poison);
  DeviceArray Et_dw = output(DType::fp32, args.k->shape(), poison);
  DeviceArray h_dh = output(DType::fp32, {s.NC, s.H, s.K}, poison);
  DeviceArray dA_qk = output(in, scores, poison), dA_qa = output(in, scores, poison);
  DeviceArray dA_bk = output(in, scores, poison), dA_ba = output(in, scores, poison);
  DeviceArray diagonals[4];
  for (DeviceArray &x : diagonals)
    x = output(DType::fp32, rows, poison);
  const detail::DplrTcBackward x{wy.A_qk.data(), wy.mE.data(), wy.A_bk.data(), wy.kd.data(),
                                 wy.bl.data(),   wy.bv.data(), h16.data(),     dh16.data(),
                                 v2.data(),      dv2.data()};
  const detail::DplrTcTerms y{
      f32(dO_h),         f32(v_dh),         f32(v2_dh),       f32(Et_dw),   f32(h_dh),
      dA_qk.data(),      dA_qa.data(),      dA_bk.data(),     dA_ba.data(), f32(diagonals[0]),
      f32(diagonals[1]), f32(diagonals[2]), f32(diagonals[3])};
  detail::launch_chunk_dplr_bwd_wy_tc(args.v->data(), d_o.data(), x, r.dv.data(), y, t, d);
  r.dq = output(in, args.q->shape(), poison);
  r.dk = output(in, args.k->shape(), poison);
  r.da = output(in, args.a->shape(), poison);
  r.db = output(in, args.b->shape(), poison);
  r.dgk = output(DType::fp32, args.gk->shape(), poison);
  detail::launch_chunk_dplr_bwd_dqk_tc(args.q->data(), args.k->data(), args.a->data(),
                                       args.b->data(), f32(args.gk), y, r.dq.data(), r.dk.data(),
                                       r.da.data(), r.db.data(), f32(r.dgk), t, d);
  return r;
}

} // namespace

ChunkShapes check_dplr_shapes(const ArraySpec &q, const ArraySpec &k, const ArraySpec &v,
                              const ArraySpec &a, const ArraySpec &b, const ArraySpec &gk,
                              const ArraySpec *h0, const ChunkOptions &opts, const ArraySpec *d_o,
                              const ArraySpec *d_ht) {
  const ChunkShapes s = check_chunk_shapes(GateKind::key, q, k, v, gk, h0, opts, d_o, d_ht);
  detail::expect("a", a, q.dtype, q.shape);
  detail::expect("b", b, q.dtype, q.shape);
  return s;
}

DplrForward chunk_dplr_fwd(const DplrArgs &args, const ChunkOptions &opts) {
  const ChunkShapes s = dplr_shapes_of(args, opts);
  const detail::ChunkDims d = dims_of(GateKind::key, s, opts, args.q->dtype());
  const ChunkTable table(s.B, s.T, opts.cu_seqlens);
  if (opts.path == KernelPath::tensor_cores)
    return tensor_core_forward(args, table, d, s, opts);
  const bool poison = opts.poison_outputs;
  DplrStages st = dplr_stages(args, table, d, s, opts.output_final_state, poison);
  DplrForward r;
  r.o = output(args.q->dtype(), {s.B, s.T, s.H, s.V}, poison);
  detail::launch_chunk_dplr_fwd_o(args.q->data(), args.v->data(), f32(st.g_cum), f32(st.A_qk),
                                  f32(st.A_qa), f32(st.h), f32(st.v2), r.o.data(), table.device(),
                                  d);
  r.final_state = std::move(st.ht);
  if (opts.return_stages) {
    r.g_cum = std::move(st.g_cum);
    r.A_qk = std::move(st.A_qk);
    r.A_qa = std::move(st.A_qa);
    r.A_ba = std::move(st.A_ba);
    r.A_bk = std::move(st.A_bk);
    r.E = std::move(st.E);
    r.w = std::move(st.w);
    r.c = std::move(st.c);
    r.h = std::move(st.h);
    r.v2 = std::move(st.v2);
  }
  return r;
}

DplrGrads chunk_dplr_bwd(const DplrArgs &args, const DeviceArray &d_o, const DeviceArray *d_ht,
                         const ChunkOptions &opts) {
  const ChunkShapes s = dplr_shapes_of(args, opts, &d_o, d_ht);
  const detail::ChunkDims d = dims_of(GateKind::key, s, opts, args.q->dtype());
  const ChunkTable table(s.B, s.T, opts.cu_seqlens);
  if (opts.path == KernelPath::tensor_cores)
    return tensor_core_backward(args, d_o, d_ht, table, d, s, opts);
  const detail::DeviceChunkTable t = table.device();
  const bool poison = opts.poison_outputs;
  const DType in = args.q->dtype();
  const std::size_t C = kernel_chunk_size;
  // the final state: the gate's term rowsum(h' . dh) at each sequence's last chunk
  DplrStages st = dplr_stages(args, table, d, s, true, poison);
  DeviceArray dv2 = output(DType::fp32, {s.B, s.T, s.H, s.V}, poison); // gradient of v2
  detail::launch_chunk_bwd_dv_local(args.q->data(), args.b->data(), f32(st.g_cum), d_o.data(),
                                    f32(dv2), t, d);
  DplrGrads r;
  r.dh = output(DType::fp32, {s.NC, s.H, s.K, s.V}, poison);
  const bool with_dh0 = args.h0 && !args.h0->empty();
  if (with_dh0)
    r.dh0 = output(DType::fp32, {s.N, s.H, s.K, s.V}, poison);
  detail::launch_chunk_bwd_dhu(args.q->data(), args.b->data(), f32(st.w), f32(st.g_cum), d_o.data(),
                               f32(d_ht), f32(dv2), f32(r.dh), with_dh0 ? f32(r.dh0) : nullptr, t,
                               d);
  DeviceArray dw = output(DType::fp32, {s.B, s.T, s.H, s.K}, poison);
  DeviceArray Et_dv2 = output(DType::fp32, {s.B, s.T, s.H, s.V}, poison);
  DeviceArray dA_ba = output(DType::fp32, {s.B, s.T, s.H, C}, poison);
  detail::launch_chunk_dplr_bwd_wy(args.a->data(), args.v->data(), f32(st.g_cum), f32(st.A_bk),
                                   f32(st.E), f32(st.h), f32(dv2), f32(dw), f32(Et_dv2), f32(dA_ba),
                                   t, d);
  r.dq = output(in, args.q->shape(), poison);
  r.dk = output(in, args.k->shape(), poison);
  r.dv = output(in, args.v->shape(), poison);
  r.da = output(in, args.a->shape(), poison);
  r.db = output(in, args.b->shape(), poison);
  DeviceArray dG = output(DType::fp32, {s.B, s.T, s.H, s.K}, poison);
  DeviceArray d_dd = output(DType::fp32, {s.B, s.T, s.H, s.K}, poison);
  detail::launch_chunk_dplr_bwd_dqk(
      args.q->data(), args.k->data(), args.v->data(), args.a->data(), args.b->data(), f32(st.g_cum),
      f32(st.A_qk), f32(st.A_bk), f32(st.E), f32(st.h), f32(st.ht), f32(st.v2), d_o.data(),
      f32(r.dh), f32(dw), f32(Et_dv2), f32(dA_ba), r.dq.data(), r.dk.data(), r.dv.data(),
      r.da.data(), r.db.data(), f32(dG), f32(d_dd), t, d);
  r.dgk = output(DType::fp32, args.gk->shape(), poison);
  detail::launch_chunk_local_cumsum_reverse(f32(dG), f32(r.dgk), t, d);
  if (!opts.return_stages)
    r.dh = DeviceArray();
  return r;
}

} // namespace ruleproof::gpu
