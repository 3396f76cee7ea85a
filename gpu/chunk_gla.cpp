// ruleproof: the host side of the chunkwise GLA kernels: shape checks, the chunk table, the
// buffers, and the kernels' order. Forward: chunk_local_cumsum, chunk_fwd_h, chunk_fwd_o.
// Backward: the same two stages again (g_cum and h, not stored by the forward), then
// chunk_bwd_dh, chunk_bwd_dqkv, chunk_bwd_dg.
#include "chunk_gla.hpp"

#include <climits>
#include <cmath>
#include <string>

namespace ruleproof::gpu {

namespace {

void expect(const std::string &name, const ArraySpec &a, DType dtype, const Shape &shape) {
  if (a.dtype != dtype)
    throw InputError(name,
                     "element type " + dtype_name(a.dtype) + ", expected " + dtype_name(dtype));
  ruleproof::detail::expect_shape(name, a.shape, shape);
}

/// The sequences and chunks of a call, on the host and on the device.
struct ChunkTable {
  std::vector<int> seq_bos, seq_eos, seq_first_chunk, chunk_seq, chunk_bos;
  DeviceArray d_seq_bos, d_seq_eos, d_seq_first_chunk, d_chunk_seq, d_chunk_bos;

  ChunkTable(std::size_t B, std::size_t T, const std::vector<std::int64_t> &cu_seqlens) {
    Options o;
    o.cu_seqlens = cu_seqlens;
    for (const Sequence &s : sequences_of(B, T, o)) {
      const int bos = static_cast<int>(s.batch * T + s.begin);
      const int eos = static_cast<int>(s.batch * T + s.end);
      seq_bos.push_back(bos);
      seq_eos.push_back(eos);
      seq_first_chunk.push_back(static_cast<int>(chunk_seq.size()));
      for (int r = bos; r < eos; r += kernel_chunk_size) {
        chunk_seq.push_back(static_cast<int>(seq_bos.size() - 1));
        chunk_bos.push_back(r);
      }
    }
    seq_first_chunk.push_back(static_cast<int>(chunk_seq.size()));
    d_seq_bos = DeviceArray::upload_ints(seq_bos);
    d_seq_eos = DeviceArray::upload_ints(seq_eos);
    d_seq_first_chunk = DeviceArray::upload_ints(seq_first_chunk);
    d_chunk_seq = DeviceArray::upload_ints(chunk_seq);
    d_chunk_bos = DeviceArray::upload_ints(chunk_bos);
  }

  detail::DeviceChunkTable device() const {
    detail::DeviceChunkTable t;
    t.seq_bos = static_cast<const int *>(d_seq_bos.data());
    t.seq_eos = static_cast<const int *>(d_seq_eos.data());
    t.seq_first_chunk = static_cast<const int *>(d_seq_first_chunk.data());
    t.chunk_seq = static_cast<const int *>(d_chunk_seq.data());
    t.chunk_bos = static_cast<const int *>(d_chunk_bos.data());
    t.N = static_cast<int>(seq_bos.size());
    t.NC = static_cast<int>(chunk_seq.size());
    return t;
  }
};

detail::GlaDims dims_of(GateKind gate, const GlaShapes &s, const GlaOptions &opts, DType input) {
  detail::GlaDims d;
  d.H = static_cast<int>(s.H);
  d.K = static_cast<int>(s.K);
  d.V = static_cast<int>(s.V);
  d.G = gate == GateKind::key ? d.K : 1;
  // the scale as the kernels use it: rounded once to fp32
  d.scale = static_cast<float>(opts.scale ? *opts.scale : 1.0 / std::sqrt(double(s.K)));
  d.fp16 = input == DType::fp16;
  return d;
}

DeviceArray output(DType dtype, Shape shape, bool poison) {
  DeviceArray a(dtype, std::move(shape));
  if (poison)
    a.poison();
  return a;
}

const float *f32(const DeviceArray *a) {
  return a && !a->empty() ? static_cast<const float *>(a->data()) : nullptr;
}
float *f32(DeviceArray &a) { return static_cast<float *>(a.data()); }

/// g_cum, the per-chunk states h and (when asked) the final state: the first two stages.
struct States {
  DeviceArray g_cum, h, ht;
};
States forward_states(const GlaArgs &args, const ChunkTable &table, const detail::GlaDims &d,
                      const GlaShapes &s, bool with_ht, bool poison) {
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

void expect_args(const GlaArgs &args) {
  if (!args.q || !args.k || !args.v || !args.g)
    throw InputError(!args.q ? "q" : !args.k ? "k" : !args.v ? "v" : "g", "missing");
}

} // namespace

GlaShapes check_gla_shapes(GateKind gate, const ArraySpec &q, const ArraySpec &k,
                           const ArraySpec &v, const ArraySpec &g, const ArraySpec *h0,
                           const GlaOptions &opts, const ArraySpec *d_o, const ArraySpec *d_ht) {
  if (gate != GateKind::scalar && gate != GateKind::key)
    throw InputError("g", "the GLA kernels take a scalar (simple_gla) or per-key (gla) gate");
  if (q.shape.size() != 4)
    throw InputError("q", "rank " + std::to_string(q.shape.size()) + ", expected [B, T, H, K]");
  if (q.dtype != DType::bf16 && q.dtype != DType::fp16)
    throw InputError("q", "element type " + dtype_name(q.dtype) + ", expected bf16 or fp16");
  const std::size_t B = q.shape[0], T = q.shape[1], H = q.shape[2], K = q.shape[3];
  expect("k", k, q.dtype, q.shape);
  if (v.shape.size() != 4)
    throw InputError("v", "rank " + std::to_string(v.shape.size()) + ", expected [B, T, H, V]");
  const std::size_t V = v.shape[3];
  expect("v", v, q.dtype, {B, T, H, V});
  if (K != 64 && K != 128)
    throw InputError("q", "K = " + std::to_string(K) + "; the kernels take K in {64, 128}");
  if (V != 64 && V != 128)
    throw InputError("v", "V = " + std::to_string(V) + "; the kernels take V in {64, 128}");
  if (H == 0)
    throw InputError("q", "H = 0 heads");
  if (B * T > static_cast<std::size_t>(INT_MAX / 2))
    throw InputError("q", "B T = " + std::to_string(B * T) + " rows: too many for int32 rows");
  expect("g", g, DType::fp32, gate == GateKind::key ? Shape{B, T, H, K} : Shape{B, T, H});
  validate_sequences(kernel_chunk_size, opts.cu_seqlens, B, T);
  const std::size_t N = opts.cu_seqlens.empty() ? B : opts.cu_seqlens.size() - 1;
  if (h0 && !h0->shape.empty())
    expect("initial_state", *h0, DType::fp32, {N, H, K, V});
  if (d_o)
    expect("do", *d_o, q.dtype, {B, T, H, V});
  if (d_ht && !d_ht->shape.empty())
    expect("dht", *d_ht, DType::fp32, {N, H, K, V});
  std::size_t NC = 0;
  Options o;
  o.cu_seqlens = opts.cu_seqlens;
  for (const Sequence &s : sequences_of(B, T, o))
    NC += (s.length() + kernel_chunk_size - 1) / kernel_chunk_size;
  return {B, T, H, K, V, N, NC};
}

GlaForward chunk_gla_fwd(GateKind gate, const GlaArgs &args, const GlaOptions &opts) {
  expect_args(args);
  const GlaShapes s = check_gla_shapes(gate, args.q->spec(), args.k->spec(), args.v->spec(),
                                       args.g->spec(), args.h0 ? &args.h0->spec() : nullptr, opts);
  const detail::GlaDims d = dims_of(gate, s, opts, args.q->dtype());
  const ChunkTable table(s.B, s.T, opts.cu_seqlens);
  const bool poison = opts.poison_outputs;
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
                       const DeviceArray *d_ht, const GlaOptions &opts) {
  expect_args(args);
  const GlaShapes s = check_gla_shapes(gate, args.q->spec(), args.k->spec(), args.v->spec(),
                                       args.g->spec(), args.h0 ? &args.h0->spec() : nullptr, opts,
                                       &d_o.spec(), d_ht ? &d_ht->spec() : nullptr);
  const detail::GlaDims d = dims_of(gate, s, opts, args.q->dtype());
  const ChunkTable table(s.B, s.T, opts.cu_seqlens);
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
