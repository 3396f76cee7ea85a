// ruleproof: the small gla forward call (B = 1, T = 5, H = 2, K = V = 4) that the test
// programs writing safetensors dumps start from: check-dump's planted-error dump
// (cli/tests/write_test_dump.cpp) and the bad-input table's files
// (property_tests/bad_input/write_bad_dumps.cpp).
#pragma once

#include <cmath>
#include <functional>

#include "io/safetensors.hpp"

namespace ruleproof::io::small_dump {

constexpr std::size_t T = 5, H = 2, K = 4, V = 4;

/// A tensor of `shape` whose element i (row-major) is value(i).
inline StoredTensor filled(DType t, std::vector<std::size_t> shape,
                           const std::function<double(std::size_t)> &value) {
  StoredTensor s{t, shape, {}};
  std::size_t n = 1;
  for (std::size_t d : shape)
    n *= d;
  for (std::size_t i = 0; i < n; ++i)
    s.values.push_back(value(i));
  return s;
}

/// Multiples of 1/64 in [-1/2, 1/2]: exact in bf16.
inline std::function<double(std::size_t)> wave(double phase) {
  return [phase](std::size_t i) {
    return std::round(32 * std::sin(1.3 * static_cast<double>(i) + phase)) / 64;
  };
}

/// Log-gates in [-7/32, -1/32].
inline double log_gate(std::size_t i) { return -static_cast<double>(1 + i % 7) / 32; }

/// gla's inputs: q, k, v in bf16 and a per-key log-gate g in fp32, [1, T, H, K or V].
inline Safetensors gla_inputs() {
  Safetensors f;
  f.tensors["q"] = filled(DType::bf16, {1, T, H, K}, wave(0.1));
  f.tensors["k"] = filled(DType::bf16, {1, T, H, K}, wave(0.7));
  f.tensors["v"] = filled(DType::bf16, {1, T, H, V}, wave(1.9));
  f.tensors["g"] = filled(DType::f32, {1, T, H, K}, log_gate);
  return f;
}

} // namespace ruleproof::io::small_dump
