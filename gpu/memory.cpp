// ruleproof: device memory through the CUDA runtime (built where nvcc exists).
#include "detail/memory.hpp"

#include <stdexcept>
#include <string>

#include <cuda_runtime_api.h>

namespace ruleproof::gpu::detail {

namespace {
void check(cudaError_t status, const char *what) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}
} // namespace

void *device_alloc(std::size_t bytes) {
  if (bytes == 0)
    return nullptr;
  void *p = nullptr;
  check(cudaMalloc(&p, bytes), "cudaMalloc");
  return p;
}

void device_free(void *p) noexcept {
  if (p)
    cudaFree(p);
}

void copy_to_device(void *dst, const void *src, std::size_t bytes) {
  if (bytes)
    check(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy to device");
}

void copy_to_host(void *dst, const void *src, std::size_t bytes) {
  if (bytes)
    check(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy to host");
}

void device_fill_bytes(void *p, unsigned char byte, std::size_t bytes) {
  if (bytes)
    check(cudaMemset(p, byte, bytes), "cudaMemset");
}

} // namespace ruleproof::gpu::detail
