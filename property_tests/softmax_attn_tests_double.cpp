// Properties of softmax attention in double (softmax_attn_tests.hpp states them; bounds from
// checks/softmax_bounds.hpp).
#include "softmax_attn_tests.hpp"

using namespace ruleproof::softmax_tests;
using S = double;

TEST_CASE("softmax_recurrent_parallel_and_chunk_forms_agree_any_chunk_size/double",
          "[softmax][double]") {
  softmax_recurrent_parallel_and_chunk_forms_agree_any_chunk_size<S>();
}

TEST_CASE("softmax_alibi_slope_m_equals_constant_gate_exp_minus_m/double", "[softmax][double]") {
  softmax_alibi_slope_m_equals_constant_gate_exp_minus_m<S>();
}

TEST_CASE("softmax_varlen_equals_each_sequence_alone/double", "[softmax][double]") {
  softmax_varlen_equals_each_sequence_alone<S>();
}

TEST_CASE("softmax_later_inputs_leave_earlier_outputs_bitwise_unchanged/double",
          "[softmax][double]") {
  softmax_later_inputs_leave_earlier_outputs_bitwise_unchanged<S>();
}

TEST_CASE("softmax_analytic_backward_equals_dual_numbers_equals_finite_differences/double",
          "[softmax][double]") {
  softmax_analytic_backward_equals_dual_numbers_equals_finite_differences<S>();
}
