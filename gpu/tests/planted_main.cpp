// ruleproof: the GPU checks run on kernels with a deliberate bug in each kernel file (built with
// RULEPROOF_PLANTED_BUG: gpu/chunk_gla.cu keeps chunk_fwd_h's decayed keys in bf16,
// gpu/chunk_delta.cu reads beta in bf16, gpu/chunk_dplr.cu keeps dplr's exclusive gate sums
// in bf16, gpu/chunk_gated_oja.cu reads the states gated_oja transposes (h0, dht, h, ht, dh,
// dh0) in bf16), to see them fail, on every rule (dplr_fla runs none of chunk_delta.cu's beta
// reads: its failures are its own file's).
// With `--kernels tensor-cores` it checks the tensor-core kernels instead, on the rules that have
// them: the forward's bug (gpu/chunk_gla_tc.cu: gla's off-diagonal scores take their right
// factor against the row before the reference row; simple_gla's scores drop their diagonal;
// gated_delta_rule's output, in the sequential kernel, takes u for v_new in its scores' term;
// gpu/chunk_dplr_tc.cu: dplr's output leaves A_qa's diagonal out) must fail the forward check;
// the backward's (gpu/chunk_gla_bwd_tc.cu: gla's dk takes its right factors against the row
// before the reference row; simple_gla's dk drops its diagonal term; gpu/chunk_delta_bwd_tc.cu:
// gated_delta_rule's dX leaves out beta; gpu/chunk_dplr_tc.cu: dplr's dk leaves out the diagonal
// term of dA_bk) the backward check on dq, dk or dg, the outputs the forward's bug cannot reach
// (the backward computes no output; a rule whose backward runs on CUDA cores needs its forward
// to fail alone).
// Prints every result; exits 0 when every case's forward or backward check fails (the bug was
// seen), 1 when a case passed both (the checks missed it), 2 when there is no GPU.
#include <cstdio>
#include <cstring>
#include <string_view>

#include "gpu/check.hpp"
#include "gpu/device.hpp"

using namespace ruleproof;
using namespace ruleproof::gpu::check;

int main(int argc, char **argv) {
  const bool tensor_cores =
      argc == 3 && !std::strcmp(argv[1], "--kernels") &&
      argv[2] == std::string_view(gpu::path_name(gpu::KernelPath::tensor_cores));
  if (argc != 1 && !tensor_cores) {
    std::fprintf(stderr, "usage: gpu_check_planted [--kernels tensor-cores]\n");
    return 2;
  }
  const gpu::DeviceInfo device = gpu::query_device();
  std::printf("GPU: %s\n", device.description.c_str());
  if (!device.available)
    return 2;
  int missed = 0;
  for (gpu::KernelRule rule : gpu::all_kernel_rules)
    for (double gate_scale : {1.0 / 16, 0.5, 2.0}) {
      if (tensor_cores && !gpu::has_tensor_core_forward(rule))
        continue;
      Case c;
      c.path = tensor_cores ? gpu::KernelPath::tensor_cores : gpu::KernelPath::cuda_cores;
      c.rule = rule;
      c.K = c.V = 64;
      c.T = 100;
      c.has_h0 = c.has_dht = true;
      c.gate_scale = gate_scale;
      c.seed = 11;
      const Result f = check_forward(c);
      const Result b = check_backward(c);
      std::printf("%s%s", f.summary().c_str(), b.summary().c_str());
      if (f.holds() && b.holds()) {
        std::printf("MISSED: the planted bug passed every check on %s\n", c.describe().c_str());
        ++missed;
      }
      // the tensor-core path plants a bug in each of its kernels: the forward's (in the scores)
      // must fail the forward, the backward's (in dk) the backward's dq, dk or dg, which the
      // scores do not reach (only dv reads them)
      const auto fails = [&](const char *output) {
        for (const Verdict &v : b.verdicts)
          if (v.output == output && !v.holds())
            return true;
        return false;
      };
      const bool backward_missed =
          gpu::has_tensor_core_backward(rule) && !(fails("dq") || fails("dk") || fails("dg"));
      if (tensor_cores && (f.holds() || backward_missed)) {
        std::printf("MISSED: a planted bug of the tensor-core %s passed on %s\n",
                    f.holds() ? "forward" : "backward", c.describe().c_str());
        ++missed;
      }
    }
  std::printf("%s\n", missed ? "the checks MISSED the planted bug"
                             : "the planted bug was caught on every case");
  return missed ? 1 : 0;
}
