// ruleproof: reading a call's tensors and options from a JSON file, and writing results.
//
// The file is one JSON object. Tensors are {"shape": [...], "data": [...]} (row-major,
// data as numbers or the strings "nan", "inf", "-inf"), named as flash-linear-attention
// names its arguments: q, k, v, g, beta, initial_state, the low-rank pair a, b (dplr, iplr),
// and for a backward pass the upstream gradients do, dht. "options" may hold scale, chunk_size,
// cu_seqlens.
#pragma once

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "io/json.hpp"
#include "reference/core/inputs.hpp"

namespace ruleproof::cli {

/// \brief Everything a file can hold for one call.
template <class S> struct InputFile {
  Inputs<S> in;
  Cotangents<S> ct;
  Options opts;
};

namespace detail {

inline double number_of(const nlohmann::json &x, const std::string &name, std::size_t i) {
  if (x.is_number())
    return x.get<double>();
  if (x.is_string()) {
    const std::string s = x.get<std::string>();
    if (s == "nan" || s == "NaN")
      return std::numeric_limits<double>::quiet_NaN();
    if (s == "inf" || s == "Infinity")
      return std::numeric_limits<double>::infinity();
    if (s == "-inf" || s == "-Infinity")
      return -std::numeric_limits<double>::infinity();
  }
  throw InputError(name, "data[" + std::to_string(i) + "] is not a number: " + x.dump());
}

/// The elements of a shape, checked before anything is allocated from it: the product of its
/// nonzero extents must not overflow (a zero extent empties the tensor, but the other extents
/// still size the state and the loops of the rule).
inline std::size_t checked_element_count(const Shape &shape, const std::string &name) {
  std::size_t nonzero = 1;
  for (const std::size_t d : shape) {
    if (d != 0 && nonzero > std::numeric_limits<std::size_t>::max() / d)
      throw InputError(name,
                       "shape " + shape_string(shape) + " has more elements than fit in memory");
    nonzero *= d == 0 ? 1 : d;
  }
  return element_count(shape);
}

template <Scalar S> Tensor<S> tensor_of(const nlohmann::json &file, const std::string &name) {
  if (!file.contains(name))
    return {};
  const nlohmann::json &t = file.at(name);
  if (!t.is_object() || !t.contains("shape") || !t.contains("data") || !t["shape"].is_array() ||
      !t["data"].is_array())
    throw InputError(name, "expected {\"shape\": [...], \"data\": [...]}");
  Shape shape;
  for (const auto &d : t["shape"]) {
    if (!d.is_number_integer() || d.get<long long>() < 0)
      throw InputError(name, "shape entries must be non-negative integers, got " + d.dump());
    shape.push_back(d.get<std::size_t>());
  }
  if (shape.empty())
    throw InputError(name, "shape is empty");
  const std::size_t count = checked_element_count(shape, name);
  if (t["data"].size() != count)
    throw InputError(name, "data has " + std::to_string(t["data"].size()) + " values, shape " +
                               shape_string(shape) + " needs " + std::to_string(count));
  Tensor<S> x(shape);
  for (std::size_t i = 0; i < x.size(); ++i)
    x[i] = from_double<S>(number_of(t["data"][i], name, i));
  return x;
}

/// cu_seqlens as integers: a fraction, or a number beyond int64, is refused rather than
/// converted (converting 1e300 to an integer is undefined).
inline std::vector<std::int64_t> offsets_of(const nlohmann::json &x) {
  if (!x.is_array())
    throw InputError("cu_seqlens", "expected an array of integers, got " + x.dump());
  std::vector<std::int64_t> cu;
  for (const nlohmann::json &e : x) {
    if (!e.is_number_integer() ||
        (e.is_number_unsigned() &&
         e.get<std::uint64_t>() > std::uint64_t(std::numeric_limits<std::int64_t>::max())))
      throw InputError("cu_seqlens", "entries must be 64-bit integers, got " + e.dump());
    cu.push_back(e.get<std::int64_t>());
  }
  return cu;
}

inline Options options_of(const nlohmann::json &file) {
  Options opts;
  if (!file.contains("options"))
    return opts;
  const nlohmann::json &o = file["options"];
  if (!o.is_object())
    throw InputError("options", "expected an object");
  try {
    if (o.contains("scale"))
      opts.scale = o["scale"].get<double>();
    if (o.contains("chunk_size")) {
      if (!o["chunk_size"].is_number_integer() || o["chunk_size"].get<long long>() < 0)
        throw InputError("chunk_size",
                         "must be a non-negative integer, got " + o["chunk_size"].dump());
      opts.chunk_size = o["chunk_size"].get<std::size_t>();
    }
    if (o.contains("cu_seqlens"))
      opts.cu_seqlens = offsets_of(o["cu_seqlens"]);
  } catch (const nlohmann::json::exception &e) {
    throw InputError("options", e.what());
  }
  return opts;
}

} // namespace detail

/// \brief Parses the text of an input file; every problem is an InputError naming what is
/// wrong (JSON that does not parse, a tensor whose data and shape differ). `name` names the
/// file in messages.
template <Scalar S> InputFile<S> parse_input_file(std::string_view text, const std::string &name) {
  const io::ParsedJson parsed = io::parse_json(text);
  if (!parsed.error.empty())
    throw InputError(name, "not valid JSON: " + parsed.error);
  const nlohmann::json &file = parsed.value;
  if (!file.is_object())
    throw InputError(name, "expected a JSON object of named tensors");
  for (const char *required : {"q", "k", "v"})
    if (!file.contains(required))
      throw InputError(required, "missing from " + name);
  InputFile<S> r;
  r.in = {detail::tensor_of<S>(file, "q"),    detail::tensor_of<S>(file, "k"),
          detail::tensor_of<S>(file, "v"),    detail::tensor_of<S>(file, "g"),
          detail::tensor_of<S>(file, "beta"), detail::tensor_of<S>(file, "initial_state"),
          detail::tensor_of<S>(file, "a"),    detail::tensor_of<S>(file, "b")};
  r.ct = {detail::tensor_of<S>(file, "do"), detail::tensor_of<S>(file, "dht")};
  r.opts = detail::options_of(file);
  return r;
}

/// \brief Reads and parses an input file (see parse_input_file); a file that cannot be opened
/// is an InputError too.
template <Scalar S> InputFile<S> read_input_file(const std::filesystem::path &path) {
  std::ifstream stream(path, std::ios::binary);
  if (!stream)
    throw InputError(path.string(), "cannot open the file");
  const std::string text((std::istreambuf_iterator<char>(stream)),
                         std::istreambuf_iterator<char>());
  return parse_input_file<S>(text, path.string());
}

/// A tensor as {"shape": [...], "data": [...]}, values rounded to double.
template <Scalar S> nlohmann::json json_of(const Tensor<S> &x) {
  nlohmann::json data = nlohmann::json::array();
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double d = to_double(x[i]);
    data.push_back(std::isfinite(d) ? nlohmann::json(d) : nlohmann::json(std::to_string(d)));
  }
  return {{"shape", x.shape()}, {"data", data}};
}

} // namespace ruleproof::cli
