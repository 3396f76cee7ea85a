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
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

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
  Tensor<S> x(shape);
  if (t["data"].size() != x.size())
    throw InputError(name, "data has " + std::to_string(t["data"].size()) + " values, shape " +
                               shape_string(shape) + " needs " + std::to_string(x.size()));
  for (std::size_t i = 0; i < x.size(); ++i)
    x[i] = from_double<S>(number_of(t["data"][i], name, i));
  return x;
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
      opts.cu_seqlens = o["cu_seqlens"].get<std::vector<std::int64_t>>();
  } catch (const nlohmann::json::exception &e) {
    throw InputError("options", e.what());
  }
  return opts;
}

} // namespace detail

/// \brief Reads and parses an input file; every problem is an InputError naming what is
/// wrong (a missing file, JSON that does not parse, a tensor whose data and shape differ).
template <Scalar S> InputFile<S> read_input_file(const std::filesystem::path &path) {
  std::ifstream stream(path);
  if (!stream)
    throw InputError(path.string(), "cannot open the file");
  nlohmann::json file;
  try {
    file = nlohmann::json::parse(stream);
  } catch (const nlohmann::json::parse_error &e) {
    throw InputError(path.string(), std::string("not valid JSON: ") + e.what());
  }
  if (!file.is_object())
    throw InputError(path.string(), "expected a JSON object of named tensors");
  for (const char *required : {"q", "k", "v"})
    if (!file.contains(required))
      throw InputError(required, "missing from " + path.string());
  InputFile<S> r;
  r.in = {detail::tensor_of<S>(file, "q"),    detail::tensor_of<S>(file, "k"),
          detail::tensor_of<S>(file, "v"),    detail::tensor_of<S>(file, "g"),
          detail::tensor_of<S>(file, "beta"), detail::tensor_of<S>(file, "initial_state"),
          detail::tensor_of<S>(file, "a"),    detail::tensor_of<S>(file, "b")};
  r.ct = {detail::tensor_of<S>(file, "do"), detail::tensor_of<S>(file, "dht")};
  r.opts = detail::options_of(file);
  return r;
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
