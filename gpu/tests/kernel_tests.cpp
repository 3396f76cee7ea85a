// ruleproof: the GPU kernels (gpu/chunk_gla.cu, gpu/chunk_delta.cu, gpu/chunk_dplr.cu,
// gpu/chunk_gated_oja.cu; gpu/chunk_gla_tc.cu on the tensor-core path) against the float128 truth
// and their emulated twin, on random shapes with shrinking, for every rule they compute: every
// output and gradient, the stages (kernel_rule.hpp, stage_names; dh), every element written
// (outputs poisoned with NaN first), causality, varlen against each sequence alone. The checks
// themselves are gpu/check.cpp (shared with `ruleproof gpu-check`). Replay a failure with
// RC_PARAMS="seed=N" and the test's name.
#include <thread>

#include "gpu/check_gen.hpp"
#include "prop_cases.hpp"

using namespace ruleproof;
using namespace ruleproof::gpu::check;

namespace {

unsigned threads() { return std::max(1u, std::thread::hardware_concurrency()); }

/// One rc::prop per rule: `check` on cases drawn for it in storage type t, run on the kernels of
/// `path` (on the tensor-core path, only the rules with a tensor-core forward).
template <class Check>
void each_rule(gpu::DType t, gen::Need need, Check check,
               gpu::KernelPath path = gpu::KernelPath::cuda_cores) {
  const std::uint64_t seed = rc::detail::configuration().testParams.seed;
  INFO("RapidCheck seed " << seed << ": replay with RC_PARAMS=\"seed=" << seed << "\"");
  for (gpu::KernelRule rule : gpu::all_kernel_rules) {
    if (path == gpu::KernelPath::tensor_cores && !gpu::has_tensor_core_forward(rule))
      continue;
    prop_cases(std::string(name_of(rule)) + " " + gpu::dtype_name(t), 10, [=] {
      RC_LOG() << "seed=" << seed << " (replay: RC_PARAMS=\"seed=" << seed << "\")\n";
      Case c = *gen::case_for(rule, t, need);
      c.path = path;
      const Result r = check(c);
      RC_LOG() << r.summary();
      RC_ASSERT(r.holds());
    });
  }
}

} // namespace

TEST_CASE("kernel_forward_outputs_and_stages_within_factor_of_twin", "[gpu]") {
  for (gpu::DType t : {gpu::DType::bf16, gpu::DType::fp16})
    each_rule(t, gen::Need::any, [](const Case &c) { return check_forward(c, threads()); });
}

TEST_CASE("kernel_gradients_within_factor_of_twin", "[gpu]") {
  for (gpu::DType t : {gpu::DType::bf16, gpu::DType::fp16})
    each_rule(t, gen::Need::any, [](const Case &c) { return check_backward(c, threads()); });
}

TEST_CASE("kernel_later_inputs_leave_earlier_outputs_bitwise_unchanged", "[gpu]") {
  each_rule(gpu::DType::bf16, gen::Need::causal, check_causality);
}

TEST_CASE("kernel_varlen_equals_each_sequence_alone_bitwise", "[gpu]") {
  each_rule(gpu::DType::bf16, gen::Need::varlen, check_varlen);
}

TEST_CASE("kernel_every_k_v_ragged_t_and_empty_sequence", "[gpu][per_rule]") {
  // The fixed cases beside the random ones (gpu/check.hpp, fixed_checks), as gpu-check runs
  // them. One section per rule, (K, V) and check, so that a slow tool can take one at a time
  // (`-c RULE -c K64_V128 -c batch_varlen`).
  for (gpu::KernelRule rule : gpu::all_kernel_rules)
    DYNAMIC_SECTION(name_of(rule)) {
      for (const auto &[K, V] : fixed_key_value_sizes)
        DYNAMIC_SECTION("K" << K << "_V" << V) {
          for (const FixedCheck &f : fixed_checks(rule, gpu::DType::bf16, K, V))
            DYNAMIC_SECTION(f.name) {
              const Result r = run(f.kind, f.c, threads());
              INFO(r.summary());
              CHECK(r.holds());
            }
        }
    }
}

// The tensor-core path (gpu/chunk_gla_tc.cu, gpu/chunk_gla_bwd_tc.cu, gpu/chunk_delta_tc.cu): the
// rules with a tensor-core forward, forward and backward each judged under the policy of the
// kernels that ran it (gpu/check.hpp, forward_policy, backward_policy); causality and varlen
// bitwise.
TEST_CASE("tensor_core_kernels_within_factor_of_twin", "[gpu][tensor_cores]") {
  for (gpu::DType t : {gpu::DType::bf16, gpu::DType::fp16}) {
    each_rule(
        t, gen::Need::any, [](const Case &c) { return check_forward(c, threads()); },
        gpu::KernelPath::tensor_cores);
    each_rule(
        t, gen::Need::any, [](const Case &c) { return check_backward(c, threads()); },
        gpu::KernelPath::tensor_cores);
  }
  each_rule(gpu::DType::bf16, gen::Need::causal, check_causality, gpu::KernelPath::tensor_cores);
  each_rule(gpu::DType::bf16, gen::Need::varlen, check_varlen, gpu::KernelPath::tensor_cores);
}

TEST_CASE("tensor_core_backward_from_saved_a_equals_solving_again_bitwise", "[gpu][tensor_cores]") {
  for (gpu::DType t : {gpu::DType::bf16, gpu::DType::fp16}) {
    each_rule(t, gen::Need::any, check_saved_backward, gpu::KernelPath::tensor_cores);
    each_rule(t, gen::Need::varlen, check_saved_backward, gpu::KernelPath::tensor_cores);
  }
}

TEST_CASE("tensor_core_every_k_v_ragged_t_and_empty_sequence", "[gpu][tensor_cores]") {
  for (gpu::KernelRule rule : gpu::all_kernel_rules)
    if (gpu::has_tensor_core_forward(rule))
      DYNAMIC_SECTION(name_of(rule)) {
        // one section per rule, type and (K, V), so that a slow tool can take one at a time
        // (`-c gla -c fp16 -c K64_V128`)
        for (gpu::DType t : {gpu::DType::bf16, gpu::DType::fp16})
          DYNAMIC_SECTION(gpu::dtype_name(t)) {
            for (const auto &[K, V] : fixed_key_value_sizes)
              DYNAMIC_SECTION("K" << K << "_V" << V) {
                for (const FixedCheck &f : fixed_checks(rule, t, K, V)) {
                  Case c = f.c;
                  c.path = gpu::KernelPath::tensor_cores;
                  const Result r = run(f.kind, c, threads());
                  INFO(r.summary());
                  CHECK(r.holds());
                }
              }
          }
      }
}
