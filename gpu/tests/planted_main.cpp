// ruleproof: the GPU checks run on kernels with a deliberate bug in each kernel file (built with
// RULEPROOF_PLANTED_BUG: gpu/chunk_gla.cu keeps chunk_fwd_h's decayed keys in bf16,
// gpu/chunk_delta.cu reads beta in bf16, gpu/chunk_dplr.cu keeps dplr's exclusive gate sums
// in bf16, gpu/chunk_gated_oja.cu reads the states gated_oja transposes (h0, dht, h, ht, dh,
// dh0) in bf16), to see them fail, on every rule (dplr_fla runs none of chunk_delta.cu's beta
// reads: its failures are its own file's).
// Prints every result; exits 0 when every case's forward or backward check fails (the bug was
// seen), 1 when a case passed both (the checks missed it), 2 when there is no GPU.
#include <cstdio>

#include "gpu/check.hpp"
#include "gpu/device.hpp"

using namespace ruleproof;
using namespace ruleproof::gpu::check;

int main() {
  const gpu::DeviceInfo device = gpu::query_device();
  std::printf("GPU: %s\n", device.description.c_str());
  if (!device.available)
    return 2;
  int missed = 0;
  for (gpu::KernelRule rule : gpu::all_kernel_rules)
    for (double gate_scale : {1.0 / 16, 0.5, 2.0}) {
      Case c;
      c.rule = rule;
      c.K = c.V = 64;
      c.T = 100;
      c.has_h0 = c.has_dht = true;
      c.gate_scale = gate_scale;
      c.seed = 11;
      const Result f = check_forward(c), b = check_backward(c);
      std::printf("%s%s", f.summary().c_str(), b.summary().c_str());
      if (f.holds() && b.holds()) {
        std::printf("MISSED: the planted bug passed every check on %s\n", c.describe().c_str());
        ++missed;
      }
    }
  std::printf("%s\n", missed ? "the checks MISSED the planted bug"
                             : "the planted bug was caught on every case");
  return missed ? 1 : 0;
}
