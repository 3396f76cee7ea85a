// ruleproof: the GPU query, built where nvcc exists (CPU fallback: device_none.cpp).
#include "device.hpp"

#include <cuda_runtime.h>

namespace ruleproof::gpu {

DeviceInfo query_device() {
  DeviceInfo info;
  info.compiled_with_cuda = true;
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    info.description = status != cudaSuccess
                           ? std::string("none (") + cudaGetErrorString(status) + ")"
                           : std::string("none (no CUDA device)");
    return info;
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  info.description = std::string(prop.name) + " (compute capability " + std::to_string(prop.major) +
                     "." + std::to_string(prop.minor) + ")";
  info.available = prop.major >= 9;
  if (!info.available)
    info.description += ": the kernels need compute capability 9.0 (Hopper)";
  return info;
}

} // namespace ruleproof::gpu
