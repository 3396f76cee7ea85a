// ruleproof: the host side every chunkwise kernel API shares (chunk_common.hpp): the common
// shape checks, the chunk table, the sizes as the kernels take them, output buffers.
#include "chunk_common.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <list>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>

namespace ruleproof::gpu {

namespace detail {

void expect(const std::string &name, const ArraySpec &a, DType dtype, const Shape &shape) {
  if (a.dtype != dtype)
    throw InputError(name,
                     "element type " + dtype_name(a.dtype) + ", expected " + dtype_name(dtype));
  ruleproof::detail::expect_shape(name, a.shape, shape);
}

/// Whether the environment variable `variable` names a switch's other form: false where it is
/// unset, empty or `usual` (the default form), true where it is `other`; anything else is an
/// error.
bool other_form(const char *variable, std::string_view usual, std::string_view other) {
  const char *name = std::getenv(variable);
  if (!name || !*name || usual == name)
    return false;
  if (other == name)
    return true;
  throw std::invalid_argument(std::string(variable) + ": '" + name + "' is neither " +
                              std::string(usual) + " nor " + std::string(other));
}

namespace {
/// The device copy of a chunk table's arrays: the one made for the same arrays by one of the last
/// kept_tables distinct tables, else a new queued copy, kept. Every launch is queued on the same
/// (legacy) stream, so a copy that leaves the cache while a kernel still reads it goes back to the
/// allocator, whose next user writes it only after that kernel; a kept copy is never written. One
/// device, as the allocator's kept blocks (memory.cpp): the copies are the current device's.
std::shared_ptr<const DeviceArray> uploaded_table(const std::vector<int> &all) {
  constexpr std::size_t kept_tables = 16;
  static std::mutex lock;
  static std::list<std::pair<std::vector<int>, std::shared_ptr<const DeviceArray>>> kept;
  std::lock_guard<std::mutex> guard(lock);
  for (auto it = kept.begin(); it != kept.end(); ++it)
    if (it->first == all) {
      kept.splice(kept.begin(), kept, it); // the most recent first
      return kept.front().second;
    }
  auto table = std::make_shared<const DeviceArray>(DeviceArray::upload_ints(all, true));
  kept.emplace_front(all, table);
  if (kept.size() > kept_tables)
    kept.pop_back();
  return table;
}
} // namespace

ChunkTable::ChunkTable(std::size_t B, std::size_t T, const std::vector<std::int64_t> &cu_seqlens) {
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
      chunk_n.push_back(std::min(kernel_chunk_size, eos - r));
    }
  }
  seq_first_chunk.push_back(static_cast<int>(chunk_seq.size()));
  std::vector<int> all;
  for (const std::vector<int> *x :
       {&seq_bos, &seq_eos, &seq_first_chunk, &chunk_seq, &chunk_bos, &chunk_n})
    all.insert(all.end(), x->begin(), x->end());
  d_table = uploaded_table(all);
}

DeviceChunkTable ChunkTable::device() const {
  DeviceChunkTable t;
  const int *at = static_cast<const int *>(d_table->data());
  const auto next = [&](const std::vector<int> &x) {
    const int *p = x.empty() ? nullptr : at;
    at += x.size();
    return p;
  };
  t.seq_bos = next(seq_bos);
  t.seq_eos = next(seq_eos);
  t.seq_first_chunk = next(seq_first_chunk);
  t.chunk_seq = next(chunk_seq);
  t.chunk_bos = next(chunk_bos);
  t.chunk_n = next(chunk_n);
  t.N = static_cast<int>(seq_bos.size());
  t.NC = static_cast<int>(chunk_seq.size());
  return t;
}

ChunkDims dims_of(GateKind gate, const ChunkShapes &s, const ChunkOptions &opts, DType input) {
  ChunkDims d;
  d.H = static_cast<int>(s.H);
  d.K = static_cast<int>(s.K);
  d.V = static_cast<int>(s.V);
  d.G = gate == GateKind::key ? d.K : gate == GateKind::value ? d.V : 1;
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

} // namespace detail

ChunkShapes check_chunk_shapes(GateKind gate, const ArraySpec &q, const ArraySpec &k,
                               const ArraySpec &v, const ArraySpec &g, const ArraySpec *h0,
                               const ChunkOptions &opts, const ArraySpec *d_o,
                               const ArraySpec *d_ht) {
  if (gate != GateKind::scalar && gate != GateKind::key && gate != GateKind::value)
    throw InputError("g", "the chunkwise kernels take a scalar, per-key or per-value gate");
  if (q.shape.size() != 4)
    throw InputError("q", "rank " + std::to_string(q.shape.size()) + ", expected [B, T, H, K]");
  if (q.dtype != DType::bf16 && q.dtype != DType::fp16)
    throw InputError("q", "element type " + dtype_name(q.dtype) + ", expected bf16 or fp16");
  const std::size_t B = q.shape[0], T = q.shape[1], H = q.shape[2], K = q.shape[3];
  detail::expect("k", k, q.dtype, q.shape);
  if (v.shape.size() != 4)
    throw InputError("v", "rank " + std::to_string(v.shape.size()) + ", expected [B, T, H, V]");
  const std::size_t V = v.shape[3];
  detail::expect("v", v, q.dtype, {B, T, H, V});
  if (K != 64 && K != 128)
    throw InputError("q", "K = " + std::to_string(K) + "; the kernels take K in {64, 128}");
  if (V != 64 && V != 128)
    throw InputError("v", "V = " + std::to_string(V) + "; the kernels take V in {64, 128}");
  if (H == 0)
    throw InputError("q", "H = 0 heads");
  if (B * T > static_cast<std::size_t>(INT_MAX / 2))
    throw InputError("q", "B T = " + std::to_string(B * T) + " rows: too many for int32 rows");
  detail::expect("g", g, DType::fp32,
                 gate == GateKind::key     ? Shape{B, T, H, K}
                 : gate == GateKind::value ? Shape{B, T, H, V}
                                           : Shape{B, T, H});
  validate_sequences(kernel_chunk_size, opts.cu_seqlens, B, T);
  const std::size_t N = opts.cu_seqlens.empty() ? B : opts.cu_seqlens.size() - 1;
  if (h0 && !h0->shape.empty())
    detail::expect("initial_state", *h0, DType::fp32, {N, H, K, V});
  if (d_o)
    detail::expect("do", *d_o, q.dtype, {B, T, H, V});
  if (d_ht && !d_ht->shape.empty())
    detail::expect("dht", *d_ht, DType::fp32, {N, H, K, V});
  std::size_t NC = 0;
  Options o;
  o.cu_seqlens = opts.cu_seqlens;
  for (const Sequence &s : sequences_of(B, T, o))
    NC += (s.length() + kernel_chunk_size - 1) / kernel_chunk_size;
  return {B, T, H, K, V, N, NC};
}

} // namespace ruleproof::gpu
