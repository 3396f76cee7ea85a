// ruleproof: raw device memory, the only CUDA runtime calls of the host side. memory.cpp
// implements them with the CUDA runtime; memory_none.cpp, where the project is built without
// nvcc, throws from each (std::runtime_error saying so).
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace ruleproof::gpu::detail {

/// Device memory of `bytes` bytes (nullptr for 0); throws on failure.
void *device_alloc(std::size_t bytes);
void device_free(void *p) noexcept;
void copy_to_device(void *dst, const void *src, std::size_t bytes);
/// copy_to_device queued after the work already asked of the device, without waiting for it (a
/// plain host-to-device copy first waits for every kernel queued before it); src may be reused
/// once it returns (the runtime stages pageable memory before returning).
void copy_to_device_queued(void *dst, const void *src, std::size_t bytes);
void copy_to_host(void *dst, const void *src, std::size_t bytes);
/// Every byte of [p, p + bytes) set to `byte`.
void device_fill_bytes(void *p, unsigned char byte, std::size_t bytes);
/// device_fill_bytes queued after the work already asked of the device, without waiting for it.
void device_fill_bytes_queued(void *p, unsigned char byte, std::size_t bytes);

/// Device memory of a given size, owned: freed (device_free) when its owner goes, on every path
/// out of a scope, an exception's too. Move-only. DeviceArray (gpu/buffer.hpp) keeps its bytes in
/// one; code without the element types and shapes (the device tests, built as C++17) uses it alone.
class DeviceBytes {
public:
  DeviceBytes() = default;
  explicit DeviceBytes(std::size_t bytes) : data_(device_alloc(bytes)) {}
  DeviceBytes(const DeviceBytes &) = delete;
  DeviceBytes &operator=(const DeviceBytes &) = delete;
  DeviceBytes(DeviceBytes &&other) noexcept : data_(std::exchange(other.data_, nullptr)) {}
  DeviceBytes &operator=(DeviceBytes &&other) noexcept {
    if (this != &other) {
      device_free(data_);
      data_ = std::exchange(other.data_, nullptr);
    }
    return *this;
  }
  ~DeviceBytes() { device_free(data_); }

  void *get() const { return data_; }
  template <class T> T *as() const { return static_cast<T *>(data_); }

private:
  void *data_ = nullptr;
};

/// `values` copied into new device memory.
template <class T> DeviceBytes device_copy_of(const std::vector<T> &values) {
  DeviceBytes d(values.size() * sizeof(T));
  copy_to_device(d.get(), values.data(), values.size() * sizeof(T));
  return d;
}

/// `count` values of type T copied from the device.
template <class T> std::vector<T> host_copy_of(const DeviceBytes &d, std::size_t count) {
  std::vector<T> values(count);
  copy_to_host(values.data(), d.get(), count * sizeof(T));
  return values;
}

} // namespace ruleproof::gpu::detail
