// ruleproof: a plain dense row-major tensor, the layout of flash-linear-attention.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "scalar.hpp"

namespace ruleproof {

using Shape = std::vector<std::size_t>;

inline std::string shape_string(const Shape &shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

/// Elements of a tensor of this shape; rank 0 means absent, so it holds none.
inline std::size_t element_count(const Shape &shape) {
  if (shape.empty())
    return 0;
  return std::accumulate(shape.begin(), shape.end(), std::size_t{1}, std::multiplies<>());
}

/// \brief A dense row-major tensor: `[B, T, H, K]` for q and k, `[B, T, H, V]` for v,
/// `[B, T, H]` for scalar gates and beta, `[N, H, K, V]` for states. Empty when unused.
template <class S> class Tensor {
public:
  Tensor() = default;
  explicit Tensor(Shape shape, const S &fill = S(0))
      : shape_(std::move(shape)), data_(element_count(shape_), fill) {}

  const Shape &shape() const { return shape_; }
  std::size_t rank() const { return shape_.size(); }
  std::size_t dim(std::size_t axis) const { return shape_.at(axis); }
  std::size_t size() const { return data_.size(); }
  bool empty() const { return shape_.empty(); }

  S *data() { return data_.data(); }
  const S *data() const { return data_.data(); }
  S &operator[](std::size_t i) { return data_[i]; }
  const S &operator[](std::size_t i) const { return data_[i]; }

  template <class... I> S &operator()(I... index) { return data_[offset(index...)]; }
  template <class... I> const S &operator()(I... index) const { return data_[offset(index...)]; }

  /// Element-wise conversion (through double only when S2 is narrower than double).
  template <class S2, class Convert> Tensor<S2> map(Convert convert) const {
    Tensor<S2> out(shape_);
    for (std::size_t i = 0; i < data_.size(); ++i)
      out[i] = convert(data_[i]);
    return out;
  }

private:
  template <class... I> std::size_t offset(I... index) const {
    const std::size_t idx[] = {static_cast<std::size_t>(index)...};
    std::size_t off = 0;
    for (std::size_t a = 0; a < sizeof...(I); ++a)
      off = off * shape_[a] + idx[a];
    return off;
  }

  Shape shape_;
  std::vector<S> data_;
};

} // namespace ruleproof
