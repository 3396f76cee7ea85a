// Softmax attention's own property, ALiBi as scalar gating, in double
// (softmax_attn_tests.hpp states it; the bound from checks/softmax_bounds.hpp).
#include "softmax_attn_tests.hpp"

using namespace ruleproof::softmax_tests;
using S = double;

TEST_CASE("softmax_alibi_slope_m_equals_constant_gate_exp_minus_m/double", "[softmax][double]") {
  softmax_alibi_slope_m_equals_constant_gate_exp_minus_m<S>();
}
