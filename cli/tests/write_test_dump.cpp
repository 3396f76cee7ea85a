// write_test_dump FILE: a small gla forward dump (B = 1, T = 5, H = 2, K = V = 4, bf16) whose
// output o is off by 0.5 at batch 0, t = 3, head 1, value 2, so check-dump fails it there;
// the command tests read it.
#include <cmath>
#include <iostream>

#include "io/tests/small_gla_dump.hpp"

int main(int argc, char **argv) {
  if (argc != 2) {
    std::cerr << "usage: write_test_dump FILE\n";
    return 2;
  }
  using namespace ruleproof;
  using namespace io::small_dump;
  io::Safetensors f = gla_inputs();
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
