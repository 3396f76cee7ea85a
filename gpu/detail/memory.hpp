// ruleproof: raw device memory, the only CUDA runtime calls of the host side. memory.cpp
// implements them with the CUDA runtime; memory_none.cpp, where the project is built without
// nvcc, throws from each (std::runtime_error saying so).
#pragma once

#include <cstddef>

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

} // namespace ruleproof::gpu::detail
