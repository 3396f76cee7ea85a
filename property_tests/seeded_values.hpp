// ruleproof test supports: the values of a drawn case, from the one seed the case keeps (so a
// shrunk case keeps its values and its description stays one line). The low-rank rules' test
// support draws through it; the delta family's (delta_support.hpp) draws the same way.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "reference/core/inputs.hpp"

namespace ruleproof::test_support {

/// \brief What a test support keeps of a drawn call: its shape, options and the one seed its
/// values come from (SeededValues below).
struct DrawnCall {
  std::size_t B = 1, T = 0, H = 1, K = 1, V = 1, C = 1;
  std::vector<std::int64_t> cu_seqlens; ///< empty: one sequence a batch row
  bool has_h0 = false, extreme_gates = false;
  std::uint64_t values_seed = 0;
  std::size_t sequences() const { return cu_seqlens.empty() ? B : cu_seqlens.size() - 1; }
  Options options() const {
    Options o;
    o.chunk_size = C;
    o.cu_seqlens = cu_seqlens;
    return o;
  }
};

/// \brief Uniform values from one seed: tensors in [-1, 1], reals in [0, 1).
class SeededValues {
public:
  explicit SeededValues(std::uint64_t seed) : rng_(seed) {}

  /// A tensor of this shape, every element uniform in [-1, 1].
  Tensor<double> uniform(Shape shape) {
    Tensor<double> x(std::move(shape));
    for (std::size_t i = 0; i < x.size(); ++i)
      x[i] = unit_(rng_);
    return x;
  }

  /// Uniform in [0, 1).
  double open01() { return open01_(rng_); }

private:
  std::mt19937_64 rng_;
  std::uniform_real_distribution<double> unit_{-1.0, 1.0}, open01_{0.0, 1.0};
};

/// Scales every row of the last axis (D entries) to Euclidean norm at most `limit`.
inline void limit_rows(Tensor<double> &x, std::size_t D, double limit) {
  for (std::size_t row = 0; row * D < x.size(); ++row) {
    double norm2 = 0;
    for (std::size_t i = 0; i < D; ++i)
      norm2 += x[row * D + i] * x[row * D + i];
    if (norm2 > limit * limit)
      for (std::size_t i = 0; i < D; ++i)
        x[row * D + i] *= limit / std::sqrt(norm2) * (1 - 1e-15);
  }
}

} // namespace ruleproof::test_support
