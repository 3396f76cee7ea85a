// ruleproof: a device buffer with its element type and shape, as the GPU host API takes and
// returns them. Uploads round to the element type (gpu/rounding.hpp); downloads widen to
// float, exactly.
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "detail/memory.hpp"
#include "reference/core/tensor.hpp"
#include "rounding.hpp"

namespace ruleproof::gpu {

/// \brief What a device buffer holds: element type and shape (rank 0: no buffer).
struct ArraySpec {
  DType dtype = DType::fp32;
  Shape shape;
};

/// \brief An owning, move-only device buffer of `element_count(shape)` elements.
class DeviceArray {
public:
  DeviceArray() = default;
  DeviceArray(DType dtype, Shape shape) : spec_{dtype, std::move(shape)}, data_(bytes()) {}
  DeviceArray(DeviceArray &&other) noexcept
      : spec_(std::exchange(other.spec_, {})), data_(std::move(other.data_)) {}
  DeviceArray &operator=(DeviceArray &&other) noexcept {
    if (this != &other) {
      spec_ = std::exchange(other.spec_, {});
      data_ = std::move(other.data_);
    }
    return *this;
  }

  const ArraySpec &spec() const { return spec_; }
  DType dtype() const { return spec_.dtype; }
  const Shape &shape() const { return spec_.shape; }
  std::size_t size() const { return element_count(spec_.shape); }
  std::size_t bytes() const { return size() * dtype_size(spec_.dtype); }
  bool empty() const { return spec_.shape.empty(); }
  void *data() { return data_.get(); }
  const void *data() const { return data_.get(); }

  /// A buffer of `dtype` holding `values` rounded to it (ties to even).
  static DeviceArray upload(DType dtype, const Shape &shape, const std::vector<float> &values) {
    DeviceArray a(dtype, shape);
    if (values.size() != a.size())
      throw std::invalid_argument("upload: " + std::to_string(values.size()) +
                                  " values for shape " + shape_string(shape));
    if (dtype_size(dtype) == 2) {
      std::vector<std::uint16_t> bits(values.size());
      for (std::size_t i = 0; i < values.size(); ++i)
        bits[i] = dtype == DType::bf16 ? bf16_bits(values[i]) : fp16_bits(values[i]);
      detail::copy_to_device(a.data(), bits.data(), a.bytes());
    } else {
      detail::copy_to_device(a.data(), values.data(), a.bytes());
    }
    return a;
  }
  template <class S> static DeviceArray upload(DType dtype, const Tensor<S> &t) {
    std::vector<float> values(t.size());
    for (std::size_t i = 0; i < t.size(); ++i)
      values[i] = static_cast<float>(t[i]);
    return upload(dtype, t.shape(), values);
  }

  /// An int32 buffer holding `values`; `queued`: copied after the work already asked of the
  /// device without waiting for it (detail::copy_to_device_queued).
  static DeviceArray upload_ints(const std::vector<int> &values, bool queued = false) {
    DeviceArray a(DType::i32, {values.size()});
    if (queued)
      detail::copy_to_device_queued(a.data(), values.data(), a.bytes());
    else
      detail::copy_to_device(a.data(), values.data(), a.bytes());
    return a;
  }

  /// The values, widened to float (exact for every floating type here; not for i32).
  std::vector<float> download() const {
    if (spec_.dtype == DType::i32)
      throw std::invalid_argument("download: an i32 buffer holds no floats");
    std::vector<float> values(size());
    if (dtype_size(spec_.dtype) == 2) {
      std::vector<std::uint16_t> bits(size());
      detail::copy_to_host(bits.data(), data(), bytes());
      for (std::size_t i = 0; i < bits.size(); ++i)
        values[i] = spec_.dtype == DType::bf16 ? bf16_value(bits[i]) : fp16_value(bits[i]);
    } else {
      detail::copy_to_host(values.data(), data(), bytes());
    }
    return values;
  }
  Tensor<float> to_tensor() const {
    Tensor<float> t(shape());
    const std::vector<float> values = download();
    std::copy(values.begin(), values.end(), t.data());
    return t;
  }

  /// Every byte 0xFF: a NaN in bf16, fp16 and fp32, so an element a kernel does not write
  /// reads back as NaN.
  void poison() { detail::device_fill_bytes(data(), 0xFF, bytes()); }

private:
  ArraySpec spec_;
  detail::DeviceBytes data_; // after spec_, whose size it is made with
};

} // namespace ruleproof::gpu
