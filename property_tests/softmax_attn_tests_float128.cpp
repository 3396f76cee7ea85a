// Properties of softmax attention in float128 (softmax_attn_tests.hpp states them; bounds from
// checks/softmax_bounds.hpp).
#include "reference/core/float128.hpp"
#include "softmax_attn_tests.hpp"

using namespace ruleproof::softmax_tests;
using S = ruleproof::float128;

TEST_CASE("softmax_recurrent_parallel_and_chunk_forms_agree_any_chunk_size/float128",
          "[softmax][float128]") {
  softmax_recurrent_parallel_and_chunk_forms_agree_any_chunk_size<S>();
}

TEST_CASE("softmax_alibi_slope_m_equals_constant_gate_exp_minus_m/float128",
          "[softmax][float128]") {
  softmax_alibi_slope_m_equals_constant_gate_exp_minus_m<S>();
}

TEST_CASE("softmax_varlen_equals_each_sequence_alone/float128", "[softmax][float128]") {
  softmax_varlen_equals_each_sequence_alone<S>();
}

TEST_CASE("softmax_later_inputs_leave_earlier_outputs_bitwise_unchanged/float128",
          "[softmax][float128]") {
  softmax_later_inputs_leave_earlier_outputs_bitwise_unchanged<S>();
}

TEST_CASE("softmax_analytic_backward_equals_dual_numbers_equals_finite_differences/float128",
          "[softmax][float128]") {
  softmax_analytic_backward_equals_dual_numbers_equals_finite_differences<S>();
}
