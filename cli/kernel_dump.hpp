// ruleproof: a kernel call dumped to a safetensors file (io/safetensors.hpp), read into the
// reference's types: the inputs as the kernel received them, the upstream gradients, the
// options, and what the kernel returned.
//
// Tensor names are flash-linear-attention's argument and return names:
//   inputs   q, k [B, T, H, K]; v [B, T, H, V]; the log-gate g: [B, T, H] (scalar gate),
//            [B, T, H, K] (per key) or [B, T, H, V] (per value, gated_oja), or gk [B, T, H, K]
//            (dplr); beta [B, T, H]; a, b [B, T, H, K] (dplr); initial_state [N, H, K, V]
//            (optional)
//   outputs  o [B, T, H, V]; final_state [N, H, K, V] (optional)
//   backward do [B, T, H, V], dht [N, H, K, V] (optional), and the kernel's gradients
//            dq, dk, dv, dg (dgk), dbeta, da, db, dh0 (each optional but dq, dk, dv)
// and the metadata strings "scale" (default K^-1/2) and "cu_seqlens" (e.g. "0,5,12", with
// B = 1). BF16, F16 and F32 tensors are accepted; q's type is the kernel's storage type.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
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
  io::DType storage = io::DType::bf16; ///< q's type
  bool backward = false;               ///< the dump holds do and the kernel's gradients
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
  return tensor_of<S>(it->second);
}

inline std::vector<std::int64_t> offsets_of(const std::string &text) {
  std::vector<std::int64_t> offsets;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    char *end = nullptr;
    const long long value = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || end != item.c_str() + item.size())
      throw InputError("cu_seqlens", "metadata '" + text + "' is not a list of integers");
    offsets.push_back(value);
    start = comma + 1;
  }
  return offsets;
}

} // namespace dump_detail

/// Reads a dump whose log-gate is named `gate` (g, or dplr's gk); a bad file, a missing tensor
/// or bad metadata throws InputError (exit 2).
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
  if (const auto it = file.metadata.find("cu_seqlens"); it != file.metadata.end())
    d.opts.cu_seqlens = dump_detail::offsets_of(it->second);
  return d;
}

} // namespace ruleproof::cli
