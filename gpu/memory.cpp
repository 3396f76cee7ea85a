// ruleproof: device memory through the CUDA runtime (built where nvcc exists).
//
// Freed blocks are kept, by size, and handed out again to a request of the same size (up to
// kept_bytes_limit in all): the host API allocates its outputs and stages on every call, and
// cudaMalloc and cudaFree (which synchronises) would otherwise take part in every timing.
#include "detail/memory.hpp"

#include <map>
#include <mutex>
#include <stdexcept>
#include <string>

#include <cuda_runtime_api.h>

namespace ruleproof::gpu::detail {

namespace {
void check(cudaError_t status, const char *what) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

constexpr std::size_t kept_bytes_limit = std::size_t{8} << 30;

/// Freed blocks by size, and the size of every live block (what device_free needs to know).
struct BlockCache {
  std::mutex lock;
  std::multimap<std::size_t, void *> kept;
  std::map<void *, std::size_t> live;
  std::size_t kept_bytes = 0;
};
BlockCache &cache() {
  static BlockCache *c = new BlockCache; // never destroyed: frees may come from static dtors
  return *c;
}
} // namespace

void *device_alloc(std::size_t bytes) {
  if (bytes == 0)
    return nullptr;
  BlockCache &c = cache();
  std::lock_guard<std::mutex> guard(c.lock);
  void *p = nullptr;
  if (const auto it = c.kept.find(bytes); it != c.kept.end()) {
    p = it->second;
    c.kept.erase(it);
    c.kept_bytes -= bytes;
  } else {
    check(cudaMalloc(&p, bytes), "cudaMalloc");
  }
  c.live.emplace(p, bytes);
  return p;
}

void device_free(void *p) noexcept {
  if (!p)
    return;
  BlockCache &c = cache();
  std::lock_guard<std::mutex> guard(c.lock);
  const auto it = c.live.find(p);
  const std::size_t bytes = it == c.live.end() ? 0 : it->second;
  if (it != c.live.end())
    c.live.erase(it);
  if (bytes == 0 || c.kept_bytes + bytes > kept_bytes_limit) {
    cudaFree(p);
    return;
  }
  c.kept.emplace(bytes, p);
  c.kept_bytes += bytes;
}

void copy_to_device(void *dst, const void *src, std::size_t bytes) {
  if (bytes)
    check(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy to device");
}

void copy_to_device_queued(void *dst, const void *src, std::size_t bytes) {
  if (bytes)
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, cudaStreamLegacy),
          "cudaMemcpyAsync to device");
}

void copy_to_host(void *dst, const void *src, std::size_t bytes) {
  if (bytes)
    check(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy to host");
}

void device_fill_bytes(void *p, unsigned char byte, std::size_t bytes) {
  if (bytes)
    check(cudaMemset(p, byte, bytes), "cudaMemset");
}

void device_fill_bytes_queued(void *p, unsigned char byte, std::size_t bytes) {
  if (bytes)
    check(cudaMemsetAsync(p, byte, bytes, cudaStreamLegacy), "cudaMemsetAsync");
}

} // namespace ruleproof::gpu::detail
