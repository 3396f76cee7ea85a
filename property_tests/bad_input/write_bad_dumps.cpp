// write_bad_dumps DIR: the safetensors files of the bad-input table (cases.txt): a well-formed
// gla dump and a gated_delta_rule dump written by io/safetensors.hpp's writer, then one file
// per problem, each the well-formed bytes with one thing broken (the header's length, its JSON,
// a tensor's offsets, dtype or shape, a value, the metadata). Written at test time, so the
// table reads no opaque committed binaries.
#include <cmath>
#include <cstdint>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

#include "io/tests/small_gla_dump.hpp"

namespace {

using namespace ruleproof;
using nlohmann::json;

using namespace io::small_dump;

/// A gla forward call: q, k, v (bf16), a per-key gate (fp32) and an output o of the right shape
/// (its values do not matter here: every case fails before anything is judged).
io::Safetensors gla_dump() {
  io::Safetensors f = gla_inputs();
  f.tensors["o"] = filled(io::DType::bf16, {1, T, H, V}, wave(2.3));
  return f;
}

/// A gated_delta_rule forward call: a scalar gate and beta in (0, 1).
io::Safetensors delta_dump() {
  io::Safetensors f = gla_dump();
  f.tensors["g"] = filled(io::DType::f32, {1, T, H}, log_gate);
  f.tensors["beta"] = filled(io::DType::f32, {1, T, H}, [](std::size_t i) {
    return 0.25 + 0.5 * static_cast<double>(i % 3) / 3;
  });
  return f;
}

/// A file's three parts: the header's length as written, the header, the data after it.
struct Parts {
  std::uint64_t length;
  json header;
  std::string data;
};

Parts split(const std::string &bytes) {
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i)
    n = (n << 8) | static_cast<unsigned char>(bytes[std::size_t(i)]);
  return {n, json::parse(bytes.substr(8, n)), bytes.substr(8 + n)};
}

std::string length_bytes(std::uint64_t n) {
  std::string b(8, '\0');
  for (std::size_t i = 0; i < 8; ++i)
    b[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return b;
}

/// The bytes of a file with this header text (its length written to match) and data.
std::string join(const std::string &header, const std::string &data) {
  return length_bytes(header.size()) + header + data;
}

std::string with_header(const std::string &bytes, const std::function<void(json &)> &edit) {
  Parts p = split(bytes);
  edit(p.header);
  return join(p.header.dump(), p.data);
}

void write(const std::string &dir, const std::string &name, const std::string &bytes) {
  std::ofstream out(dir + "/" + name + ".safetensors", std::ios::binary | std::ios::trunc);
  out << bytes;
  if (!out)
    throw std::runtime_error("cannot write " + dir + "/" + name + ".safetensors");
}

/// A well-formed file of `f` with one value changed.
std::string with_value(io::Safetensors f, const std::string &tensor, std::size_t i, double x) {
  f.tensors.at(tensor).values.at(i) = x;
  return io::safetensors_bytes(f);
}

std::string with_metadata(io::Safetensors f, const std::string &key, const std::string &value) {
  f.metadata[key] = value;
  return io::safetensors_bytes(f);
}

void write_all(const std::string &dir) {
  const io::Safetensors gla = gla_dump(), delta = delta_dump();
  const std::string good = io::safetensors_bytes(gla);
  const Parts parts = split(good);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();

  // The file's structure.
  write(dir, "empty", "");
  write(dir, "length_only", good.substr(0, 5));
  write(dir, "truncated_data", good.substr(0, good.size() - 7));
  write(dir, "header_past_end", length_bytes(parts.length + 1000) + good.substr(8));
  write(dir, "header_oversized", length_bytes(std::uint64_t(1) << 40) + good.substr(8));
  write(dir, "header_not_json", join("{\"q\": {\"dtype\": \"BF16\",", parts.data));
  write(dir, "header_not_object", join("[1, 2, 3]", parts.data));
  write(dir, "offsets_out_of_range",
        with_header(good, [&](json &h) { h["v"]["data_offsets"][1] = parts.data.size() + 8; }));
  write(dir, "offsets_reversed", with_header(good, [](json &h) {
          h["v"]["data_offsets"] = {h["v"]["data_offsets"][1], h["v"]["data_offsets"][0]};
        }));
  write(dir, "offsets_overlapping",
        with_header(good, [](json &h) { h["k"]["data_offsets"] = h["q"]["data_offsets"]; }));
  write(dir, "offsets_negative",
        with_header(good, [](json &h) { h["q"]["data_offsets"][0] = -2; }));
  write(dir, "dtype_unknown", with_header(good, [](json &h) { h["q"]["dtype"] = "I32"; }));
  write(dir, "entry_without_shape", with_header(good, [](json &h) { h["v"].erase("shape"); }));
  write(dir, "shape_bytes_mismatch", with_header(good, [](json &h) {
          h["v"]["shape"] = {1, T, H, V + 1};
        }));
  write(dir, "metadata_not_strings", with_header(good, [](json &h) {
          h["__metadata__"] = {{"scale", 0.5}};
        }));

  // The tensors a rule needs, and their shapes.
  io::Safetensors f = gla;
  f.tensors.erase("v");
  write(dir, "missing_v", io::safetensors_bytes(f));
  f = gla;
  f.tensors.erase("o");
  write(dir, "missing_o", io::safetensors_bytes(f));
  f = gla;
  f.tensors["o"] = filled(io::DType::bf16, {1, T, H, V - 1}, wave(2.3));
  write(dir, "o_wrong_shape", io::safetensors_bytes(f));
  f = gla;
  f.tensors["k"] = filled(io::DType::bf16, {1, T, H, K + 1}, wave(0.7));
  write(dir, "k_wrong_shape", io::safetensors_bytes(f));
  f = gla;
  f.tensors["do"] = filled(io::DType::bf16, {1, T, H, V}, wave(0.4));
  write(dir, "do_without_dq", io::safetensors_bytes(f));

  // Values.
  write(dir, "q_nan", with_value(gla, "q", 3, nan));
  write(dir, "k_infinite", with_value(gla, "k", 6, -inf));
  write(dir, "g_positive", with_value(gla, "g", 9, 0.25));
  write(dir, "g_nan", with_value(gla, "g", 2, nan));
  write(dir, "beta_above_one", with_value(delta, "beta", 4, 1.5));
  write(dir, "beta_zero", with_value(delta, "beta", 1, 0.0));
  write(dir, "gla_valid", good);
  f = gla;
  f.tensors["beta"] = delta.tensors.at("beta");
  write(dir, "gla_with_beta", io::safetensors_bytes(f));
  write(dir, "delta_valid", io::safetensors_bytes(delta));
  write(dir, "o_nan", with_value(gla, "o", 5, nan));

  // Metadata.
  write(dir, "cu_seqlens_not_integers", with_metadata(gla, "cu_seqlens", "0,2.5,5"));
  write(dir, "cu_seqlens_empty", with_metadata(gla, "cu_seqlens", ""));
  write(dir, "cu_seqlens_not_increasing", with_metadata(gla, "cu_seqlens", "0,3,2,5"));
  write(dir, "cu_seqlens_wrong_end", with_metadata(gla, "cu_seqlens", "0,2,4"));
  write(dir, "cu_seqlens_negative", with_metadata(gla, "cu_seqlens", "-1,2,5"));
  write(dir, "scale_not_a_number", with_metadata(gla, "scale", "half"));
  write(dir, "scale_infinite", with_metadata(gla, "scale", "inf"));
  write(dir, "chunk_size_not_a_number", with_metadata(gla, "chunk_size", "sixty"));
  write(dir, "chunk_size_zero", with_metadata(gla, "chunk_size", "0"));

  // cu_seqlens as flash-linear-attention passes it: an I64 tensor (or a JSON list).
  f = gla;
  f.tensors["cu_seqlens"] = io::StoredTensor{io::DType::f32, {3}, {0, 2, 5}};
  write(dir, "cu_seqlens_tensor_f32", io::safetensors_bytes(f));
  f.tensors["cu_seqlens"] = io::StoredTensor{io::DType::i64, {3}, {0, 3, 2}};
  write(dir, "cu_seqlens_tensor_not_increasing", io::safetensors_bytes(f));
  f.tensors["cu_seqlens"] = io::StoredTensor{io::DType::i64, {3}, {0, 2, 5}};
  write(dir, "cu_seqlens_tensor_and_metadata_differ", with_metadata(f, "cu_seqlens", "[0, 3, 5]"));
  write(dir, "cu_seqlens_list_not_closed", with_metadata(gla, "cu_seqlens", "[0, 2, 5"));
  f.tensors["cu_seqlens"] = io::StoredTensor{io::DType::i64, {3}, {0, 2, 1e17}};
  write(dir, "cu_seqlens_beyond_2_53", io::safetensors_bytes(f));

  // What the twin's precision policy reads: the kernel's one input type.
  f = gla;
  f.tensors["k"].dtype = io::DType::f16;
  write(dir, "inputs_of_two_types", io::safetensors_bytes(f));
  f = gla;
  for (const char *name : {"q", "k", "v", "o"})
    f.tensors[name].dtype = io::DType::f32;
  write(dir, "inputs_f32", io::safetensors_bytes(f));
  f = gla;
  f.tensors["q"].dtype = io::DType::i64;
  write(dir, "q_i64", io::safetensors_bytes(f));
  f = delta;
  f.tensors.erase("beta");
  write(dir, "delta_without_beta", io::safetensors_bytes(f));
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::cerr << "usage: write_bad_dumps DIR\n";
    return 2;
  }
  try {
    write_all(argv[1]);
  } catch (const std::exception &e) {
    std::cerr << "write_bad_dumps: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
