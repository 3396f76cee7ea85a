// write_test_dump FILE: a small gla forward dump (B = 1, T = 5, H = 2, K = V = 4, bf16) whose
// output o is off by 0.5 at batch 0, t = 3, head 1, value 2, so check-dump fails it there;
// the command tests read it.
#include <cmath>
#include <iostream>

#include "io/safetensors.hpp"

int main(int argc, char **argv) {
  if (argc != 2) {
    std::cerr << "usage: write_test_dump FILE\n";
    return 2;
  }
  using namespace ruleproof;
  const std::size_t T = 5, H = 2, K = 4, V = 4;
  io::Safetensors f;
  const auto tensor = [&](io::DType t, std::vector<std::size_t> shape, auto value) {
    io::StoredTensor s{t, shape, {}};
    std::size_t n = 1;
    for (std::size_t d : shape)
      n *= d;
    for (std::size_t i = 0; i < n; ++i)
      s.values.push_back(value(i));
    return s;
  };
  const auto wave = [](double phase) {
    return [phase](std::size_t i) { // multiples of 1/64 in [-1/2, 1/2]: exact in bf16
      return std::round(32 * std::sin(1.3 * static_cast<double>(i) + phase)) / 64;
    };
  };
  f.tensors["q"] = tensor(io::DType::bf16, {1, T, H, K}, wave(0.1));
  f.tensors["k"] = tensor(io::DType::bf16, {1, T, H, K}, wave(0.7));
  f.tensors["v"] = tensor(io::DType::bf16, {1, T, H, V}, wave(1.9));
  f.tensors["g"] = tensor(io::DType::f32, {1, T, H, K},
                          [](std::size_t i) { return -static_cast<double>(1 + i % 7) / 32; });
  // The recurrence S_t = Diag(exp(g_t)) S_{t-1} + k_t v_t^T, o_t = S_t^T (K^-1/2 q_t), in
  // double: close to the truth, far within what bf16 allows, except the planted element.
  io::StoredTensor o{io::DType::bf16, {1, T, H, V}, std::vector<double>(T * H * V)};
  io::StoredTensor s_final{io::DType::f32, {1, H, K, V}, std::vector<double>(H * K * V)};
  for (std::size_t h = 0; h < H; ++h) {
    std::vector<double> S(K * V, 0.0);
    for (std::size_t t = 0; t < T; ++t) {
      const std::size_t row = (t * H + h) * K;
      for (std::size_t a = 0; a < K; ++a)
        for (std::size_t b = 0; b < V; ++b)
          S[a * V + b] =
              std::exp(f.tensors["g"].values[row + a]) * S[a * V + b] +
              f.tensors["k"].values[row + a] * f.tensors["v"].values[(t * H + h) * V + b];
      for (std::size_t b = 0; b < V; ++b) {
        double sum = 0;
        for (std::size_t a = 0; a < K; ++a)
          sum += S[a * V + b] * f.tensors["q"].values[row + a] / std::sqrt(double(K));
        o.values[(t * H + h) * V + b] = sum;
      }
    }
    for (std::size_t i = 0; i < K * V; ++i)
      s_final.values[h * K * V + i] = S[i];
  }
  o.values[(3 * H + 1) * V + 2] += 0.5; // the planted error
  f.tensors["o"] = o;
  f.tensors["final_state"] = s_final;
  io::write_safetensors(argv[1], f);
  return 0;
}
