// ruleproof: Catch2's main for the GPU kernel tests. Where no Hopper GPU is found it prints
// why and exits 77 (ctest: skipped) instead of running; listing the tests always works.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>

#include "gpu/device.hpp"

int main(int argc, char **argv) {
  bool listing = false;
  for (int i = 1; i < argc; ++i)
    listing = listing || std::string(argv[i]).rfind("--list", 0) == 0;
  if (!listing) {
    const ruleproof::gpu::DeviceInfo device = ruleproof::gpu::query_device();
    if (!device.available) {
      std::printf("SKIPPED: the GPU kernel tests need a Hopper GPU; found %s\n",
                  device.description.c_str());
      return 77;
    }
    std::printf("GPU: %s\n", device.description.c_str());
  }
  return Catch::Session().run(argc, argv);
}
