// ruleproof: a kernel call dumped to a safetensors file (io/safetensors.hpp), read into the
// reference's types: the inputs as the kernel received them, the upstream gradients, the
// options, and what the kernel returned, with the type each was stored in.
//
// Tensor names are flash-linear-attention's argument and return names:
//   inputs   q, k [B, T, H, K]; v [B, T, H, V]; the log-gate g: [B, T, H] (scalar gate) or
//            [B, T, H, K] (per key), gk [B, T, H, K] (dplr), gv [B, T, H, V] (gated_oja, per
//            value); beta [B, T, H]; a, b [B, T, H, K] (dplr); initial_state [N, H, K, V]
//            (optional); cu_seqlens [N + 1] (I64, optional, B = 1)
//   outputs  o [B, T, H, V]; final_state [N, H, K, V] (optional)
//   backward do [B, T, H, V], dht [N, H, K, V] (optional), and the kernel's gradients
//            dq, dk, dv, dg (dgk, dgv), dbeta, da, db, dh0 (each optional but dq, dk, dv)
// and the metadata strings "scale" (default K^-1/2), "chunk_size" (the kernel's, default 64) and
// "cu_seqlens" when no tensor holds them ("0,5,12" or the JSON list "[0, 5, 12]").
// BF16, F16 and F32 tensors are accepted; q's type is the kernel's input type, which k, v, a, b
// and do share.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

#include "io/safetensors.hpp"
#include "reference/core/inputs.hpp"

namespace ruleproof::cli {

/// \brief Everything a dump holds.
template <class S> struct KernelDump {
  Inputs<S> in;
  Cotangents<S> ct;
  Options opts;
  Output<S> out;
  Grads<S> grads;
  io::DType storage = io::DType::bf16;    ///< q's type, the kernel's input type
  std::map<std::string, io::DType> types; ///< every tensor's type, by name
  bool backward = false;                  ///< the dump holds do and the kernel's gradients
};

namespace dump_detail {

template <class S> Tensor<S> tensor_of(const io::StoredTensor &t) {
  Tensor<S> x(t.shape);
  for (std::size_t i = 0; i < t.values.size(); ++i)
    x[i] = static_cast<S>(t.values[i]);
  return x;
}

/// The tensor `name` of the dump, or an empty tensor when it is optional and absent.
template <class S>
Tensor<S> take(const io::Safetensors &file, const std::string &name, const std::string &path,
               bool required, const std::string &why = "") {
  const auto it = file.tensors.find(name);
  if (it == file.tensors.end()) {
    if (required)
      throw InputError(name, "missing from " + path + (why.empty() ? "" : " (" + why + ")"));
    return Tensor<S>();
  }
  if (it->second.dtype == io::DType::i64)
    throw InputError(name, "I64: a kernel's tensors are BF16, F16 or F32");
  return tensor_of<S>(it->second);
}

/// The offsets of metadata "0,5,12" or "[0, 5, 12]" (a JSON list, as Python writes one).
inline std::vector<std::int64_t> offsets_of(const std::string &text) {
  const std::size_t first = text.find_first_not_of(" \t"), last = text.find_last_not_of(" \t");
  const bool listed = first != std::string::npos && text[first] == '[' && text[last] == ']';
  const std::string items = listed ? text.substr(first + 1, last - first - 1) : text;
  std::vector<std::int64_t> offsets;
  std::size_t start = 0;
  while (start <= items.size()) {
    const std::size_t comma = std::min(items.find(',', start), items.size());
    std::string item = items.substr(start, comma - start);
    if (listed) { // JSON allows blanks around each number
      item.erase(0, item.find_first_not_of(" \t"));
      item.erase(item.find_last_not_of(" \t") + 1);
    }
    char *end = nullptr;
    const long long value = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || end != item.c_str() + item.size())
      throw InputError("cu_seqlens", "metadata '" + text + "' is not a list of integers");
    offsets.push_back(value);
    start = comma + 1;
  }
  return offsets;
}

/// A whole number of at least 1 from metadata `name`.
inline std::size_t positive_of(const std::string &name, const std::string &text) {
  char *end = nullptr;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || end != text.c_str() + text.size() || value < 1)
    throw InputError(name, "metadata '" + text + "' is not a whole number of at least 1");
  return static_cast<std::size_t>(value);
}

} // namespace dump_detail

/// Reads a dump whose log-gate is named `gate` (g, dplr's gk, gated_oja's gv); a bad file, a
/// missing tensor, inputs of mixed types or bad metadata throw InputError (exit 2).
template <class S>
KernelDump<S> read_kernel_dump(const std::filesystem::path &path, const std::string &gate = "g") {
  using dump_detail::take;
  io::Safetensors file;
  try {
    file = io::read_safetensors(path);
  } catch (const io::FileError &e) {
    throw InputError("dump", e.what());
  }
  const std::string p = path.string();
  KernelDump<S> d;
  d.in.q = take<S>(file, "q", p, true);
  d.storage = file.tensors.at("q").dtype;
  d.in.k = take<S>(file, "k", p, true);
  d.in.v = take<S>(file, "v", p, true);
  d.in.g = take<S>(file, gate, p, false);
  d.in.beta = take<S>(file, "beta", p, false);
  d.in.a = take<S>(file, "a", p, false);
  d.in.b = take<S>(file, "b", p, false);
  d.in.h0 = take<S>(file, "initial_state", p, false);
  d.out.o = take<S>(file, "o", p, true, "the kernel's output");
  d.out.final_state = take<S>(file, "final_state", p, false);
  d.opts.output_final_state = !d.out.final_state.empty();
  d.backward = file.tensors.count("do") > 0;
  if (d.backward) {
    const std::string why = "the kernel's gradient, needed with do";
    d.ct.d_o = take<S>(file, "do", p, true);
    d.ct.d_ht = take<S>(file, "dht", p, false);
    d.grads.dq = take<S>(file, "dq", p, true, why);
    d.grads.dk = take<S>(file, "dk", p, true, why);
    d.grads.dv = take<S>(file, "dv", p, true, why);
    d.grads.dg = take<S>(file, "d" + gate, p, false);
    d.grads.dbeta = take<S>(file, "dbeta", p, false);
    d.grads.da = take<S>(file, "da", p, false);
    d.grads.db = take<S>(file, "db", p, false);
    d.grads.dh0 = take<S>(file, "dh0", p, false);
  }
  if (const auto it = file.metadata.find("scale"); it != file.metadata.end()) {
    char *end = nullptr;
    const double scale = std::strtod(it->second.c_str(), &end);
    if (it->second.empty() || end != it->second.c_str() + it->second.size() ||
        !std::isfinite(scale))
      throw InputError("scale", "metadata '" + it->second + "' is not a finite number");
    d.opts.scale = scale;
  }
  if (const auto it = file.metadata.find("chunk_size"); it != file.metadata.end())
    d.opts.chunk_size = dump_detail::positive_of("chunk_size", it->second);
  else
    d.opts.chunk_size = 64;
  const auto offsets = file.tensors.find("cu_seqlens");
  const auto listed = file.metadata.find("cu_seqlens");
  if (offsets != file.tensors.end()) {
    if (offsets->second.dtype != io::DType::i64 || offsets->second.shape.size() != 1)
      throw InputError("cu_seqlens", "a tensor of " + io::to_string(offsets->second.dtype) +
                                         "; offsets are one row of I64");
    for (double x : offsets->second.values)
      d.opts.cu_seqlens.push_back(static_cast<std::int64_t>(x));
    if (listed != file.metadata.end() &&
        dump_detail::offsets_of(listed->second) != d.opts.cu_seqlens)
      throw InputError("cu_seqlens", "the tensor and the metadata '" + listed->second + "' differ");
  } else if (listed != file.metadata.end()) {
    d.opts.cu_seqlens = dump_detail::offsets_of(listed->second);
  }
  for (const auto &[name, t] : file.tensors)
    d.types[name] = t.dtype;
  for (const char *name : {"k", "v", "a", "b", "do"}) // the kernel's input type: q's
    if (const auto it = d.types.find(name); it != d.types.end() && it->second != d.storage)
      throw InputError(name, io::to_string(it->second) + ", but q is " + io::to_string(d.storage) +
                                 ": a kernel's 16-bit inputs share one type");
  return d;
}

} // namespace ruleproof::cli
