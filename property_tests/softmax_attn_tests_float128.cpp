// Softmax attention's own property, ALiBi as scalar gating, in float128
// (softmax_attn_tests.hpp states it; the bound from checks/softmax_bounds.hpp).
#include "reference/core/float128.hpp"
#include "softmax_attn_tests.hpp"

using namespace ruleproof::softmax_tests;
using S = ruleproof::float128;

TEST_CASE("softmax_alibi_slope_m_equals_constant_gate_exp_minus_m/float128",
          "[softmax][float128]") {
  softmax_alibi_slope_m_equals_constant_gate_exp_minus_m<S>();
}
