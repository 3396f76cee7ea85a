// ruleproof property tests: gated_oja, the chunk transition and the gate at 1, in float128
// (gated_oja_tests.hpp states them; bounds from checks/lowrank_bounds.hpp).
#include "gated_oja_tests.hpp"
#include "reference/core/float128.hpp"

using namespace ruleproof::lowrank_tests;
using S = ruleproof::float128;

TEST_CASE("gated_oja_chunk_transition_is_the_product_of_its_steps/float128",
          "[lowrank][float128]") {
  gated_oja_chunk_transition_is_the_product_of_its_steps<S>();
}

TEST_CASE("gated_oja_with_gate_one_is_the_oja_rule/float128", "[lowrank][float128]") {
  gated_oja_with_gate_one_is_the_oja_rule<S>();
}
