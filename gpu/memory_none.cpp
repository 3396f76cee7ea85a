// ruleproof: device memory where the project was built without nvcc: every call throws.
#include "detail/memory.hpp"

#include <stdexcept>

namespace ruleproof::gpu::detail {

namespace {
[[noreturn]] void no_cuda() {
  throw std::runtime_error(
      "ruleproof was built without its CUDA kernels (no nvcc, or RULEPROOF_CUDA=OFF)");
}
} // namespace

void *device_alloc(std::size_t bytes) {
  if (bytes == 0)
    return nullptr;
  no_cuda();
}
void device_free(void *) noexcept {}
void copy_to_device(void *, const void *, std::size_t bytes) {
  if (bytes)
    no_cuda();
}
void copy_to_device_queued(void *, const void *, std::size_t bytes) {
  if (bytes)
    no_cuda();
}
void copy_to_host(void *, const void *, std::size_t bytes) {
  if (bytes)
    no_cuda();
}
void device_fill_bytes(void *, unsigned char, std::size_t bytes) {
  if (bytes)
    no_cuda();
}
void device_fill_bytes_queued(void *, unsigned char, std::size_t bytes) {
  if (bytes)
    no_cuda();
}

} // namespace ruleproof::gpu::detail
