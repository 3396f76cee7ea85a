// ruleproof: the GPU query where the project was built without its CUDA kernels.
#include "device.hpp"

namespace ruleproof::gpu {

DeviceInfo query_device() {
  return {false, false,
          "none (built without the CUDA kernels: no nvcc, or RULEPROOF_CUDA=OFF, which "
          "scripts/bootstrap.sh sets where no GPU is found; bootstrap.sh --cuda builds them)"};
}

} // namespace ruleproof::gpu
