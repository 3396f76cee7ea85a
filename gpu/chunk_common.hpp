// ruleproof: what the host APIs of the chunkwise kernels share (gpu/chunk_gla.hpp,
// gpu/chunk_delta.hpp): the options of a call, its checked sizes, and the shape checks common
// to every rule. Where ruleproof was built without nvcc the checks still run.
//
// Conventions (flash-linear-attention's, DESIGN.md): q, k [B, T, H, K] and v [B, T, H, V] in
// bf16 or fp16 (all three alike), K and V in {64, 128}; g, natural-log gates (g <= 0), fp32
// [B, T, H] (scalar gate), [B, T, H, K] (per-key gate) or [B, T, H, V] (per-value gate);
// states [N, H, K, V] fp32; cu_seqlens (N + 1 offsets, B == 1, empty sequences allowed). Chunk
// size 64. Values are not checked (finite inputs and g <= 0 are the caller's): the kernels
// compute what the formulas give.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "buffer.hpp"
#include "detail/chunk_launch.hpp"
#include "kernel_rule.hpp"
#include "reference/core/validate.hpp"

namespace ruleproof::gpu {

/// \brief Everything that is not a tensor.
struct ChunkOptions {
  KernelPath path = KernelPath::tensor_cores; ///< kernel_rule.hpp; cuda_cores: the fp32 kernels
  std::optional<double> scale;                ///< multiplies q; default K^-1/2
  std::vector<std::int64_t> cu_seqlens; ///< N + 1 offsets with B == 1; empty: a sequence a row
  bool output_final_state = true;
  bool return_stages = false; ///< also return the stage intermediates (each rule lists them)
  bool poison_outputs =
      false; ///< fill outputs with NaN first (checks that every element is written)
  /// the forward also returns what its backward can take in place of making it again (the delta
  /// rules' tensor-core path: DeltaForward::saved); a forward without a backward to come leaves it
  bool keep_for_backward = false;
  /// with keep_for_backward, the delta rules' forward also keeps its WY pass's w, u and decayed
  /// factors (DeltaSaved::w and the rest: four tensors the size of k more, until the backward),
  /// so that its backward runs no WY pass at all; not gated_delta_rule's under its fused forward
  /// forms (RULEPROOF_DELTA_FORWARD), whose backward makes every stage from A in one kernel
  bool keep_factors = false;
};

/// \brief The sizes of a checked call.
struct ChunkShapes {
  std::size_t B, T, H, K, V, N, NC; ///< NC: chunks of 64 over every sequence
};

/// \brief Checks shapes and element types (InputError naming the tensor): the gate scalar,
/// per key or per value; q, k, v rank 4, alike, bf16 or fp16, K and V in {64, 128}; g fp32 of the
/// gate's shape; h0 fp32 [N, H, K, V]; cu_seqlens as validate_sequences says; do like v, dht fp32
/// like h0 (when given).
ChunkShapes check_chunk_shapes(GateKind gate, const ArraySpec &q, const ArraySpec &k,
                               const ArraySpec &v, const ArraySpec &g, const ArraySpec *h0,
                               const ChunkOptions &opts, const ArraySpec *d_o = nullptr,
                               const ArraySpec *d_ht = nullptr);

namespace detail {

/// a's element type is `dtype` and its shape `shape`, else InputError naming `name`.
void expect(const std::string &name, const ArraySpec &a, DType dtype, const Shape &shape);

/// The sequences and chunks of a call, on the host and on the device.
struct ChunkTable {
  std::vector<int> seq_bos, seq_eos, seq_first_chunk, chunk_seq, chunk_bos, chunk_n;
  /// The six arrays one after the other on the device, copied in one queued copy (a call waits
  /// for no kernel before its own), or the copy a call before made of the same arrays
  /// (uploaded_table): a repeated shape copies nothing.
  std::shared_ptr<const DeviceArray> d_table;

  ChunkTable(std::size_t B, std::size_t T, const std::vector<std::int64_t> &cu_seqlens);
  DeviceChunkTable device() const;
};

/// The sizes and options of a checked call as the kernels take them (the scale rounded once to
/// fp32).
ChunkDims dims_of(GateKind gate, const ChunkShapes &s, const ChunkOptions &opts, DType input);

/// A fresh output buffer, NaN-filled when `poison`.
DeviceArray output(DType dtype, Shape shape, bool poison);

/// An fp32 buffer's pointer; nullptr for a null or empty one.
const float *f32(const DeviceArray *a);
float *f32(DeviceArray &a);

/// Whether the environment variable `variable` names a switch's other form: false where it is
/// unset, empty or `usual` (the default form), true where it is `other`; anything else is an
/// error (std::invalid_argument).
bool other_form(const char *variable, std::string_view usual, std::string_view other);

/// An optional array's spec: nullptr for a null one.
inline const ArraySpec *spec_of(const DeviceArray *a) { return a ? &a->spec() : nullptr; }

} // namespace detail
} // namespace ruleproof::gpu
