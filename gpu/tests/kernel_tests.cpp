// ruleproof: the GPU kernels (gpu/chunk_gla.cu, gpu/chunk_delta.cu, gpu/chunk_low_rank.cu)
// against the float128 truth and their emulated twin, on random shapes with shrinking, for
// every rule they compute: every output and gradient, the stages (kernel_rule.hpp,
// stage_names; dh), every element written (outputs poisoned with NaN first), causality,
// varlen against each sequence alone. The checks themselves are gpu/check.cpp (shared with
// `ruleproof gpu-check`). Replay a failure with RC_PARAMS="seed=N" and the test's name.
#include <thread>

#include "gpu/check_gen.hpp"
#include "prop_cases.hpp"

using namespace ruleproof;
using namespace ruleproof::gpu::check;

namespace {

unsigned threads() { return std::max(1u, std::thread::hardware_concurrency()); }

/// One rc::prop per rule: `check` on cases drawn for it in storage type t.
template <class Check> void each_rule(gpu::DType t, gen::Need need, Check check) {
  const std::uint64_t seed = rc::detail::configuration().testParams.seed;
  INFO("RapidCheck seed " << seed << ": replay with RC_PARAMS=\"seed=" << seed << "\"");
  for (gpu::KernelRule rule : gpu::all_kernel_rules)
    prop_cases(rule_name(rule) + " " + gpu::dtype_name(t), 10, [=] {
      RC_LOG() << "seed=" << seed << " (replay: RC_PARAMS=\"seed=" << seed << "\")\n";
      const Case c = *gen::case_for(rule, t, need);
      const Result r = check(c);
      RC_LOG() << r.summary();
      RC_ASSERT(r.holds());
    });
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
  // Fixed cases beside the random ones: every (K, V), T one past two chunks, and a varlen
  // batch with empty sequences first, in the middle and last, one of exactly one chunk. One
  // section per rule, so that a slow tool can take one rule at a time (`-c RULE`).
  for (gpu::KernelRule rule : gpu::all_kernel_rules)
    DYNAMIC_SECTION(rule_name(rule)) {
      for (std::size_t K : {64, 128})
        for (std::size_t V : {64, 128}) {
          Case c;
          c.rule = rule;
          c.K = K;
          c.V = V;
          c.B = 2;
          c.H = 2;
          c.T = 129;
          c.has_h0 = c.has_dht = true;
          c.seed = K * 1000 + V;
          for (const Result &r : {check_forward(c, threads()), check_backward(c, threads())}) {
            INFO(r.summary());
            CHECK(r.holds());
          }
          Case v = c;
          v.B = 1;
          v.cu_seqlens = {0, 0, 64, 64, 129, 129};
          for (const Result &r :
               {check_forward(v, threads()), check_backward(v, threads()), check_varlen(v)}) {
            INFO(r.summary());
            CHECK(r.holds());
          }
        }
    }
}
