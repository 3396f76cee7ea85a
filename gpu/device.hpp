// ruleproof: which GPU, if any, the GPU checks can run on.
#pragma once

#include <string>

namespace ruleproof::gpu {

/// \brief What the machine offers: whether CUDA was compiled in, and the device found.
struct DeviceInfo {
  bool compiled_with_cuda = false;
  bool available = false;  ///< a device of compute capability 9.0 (Hopper) or newer
  std::string description; ///< the device's name, or why there is none
};

/// Looks for a Hopper GPU; never throws.
DeviceInfo query_device();

} // namespace ruleproof::gpu
