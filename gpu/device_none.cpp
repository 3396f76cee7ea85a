// ruleproof: the GPU query where the project was built without nvcc.
#include "device.hpp"

namespace ruleproof::gpu {

DeviceInfo query_device() { return {false, false, "none (built without CUDA: nvcc not found)"}; }

} // namespace ruleproof::gpu
