// ruleproof property tests: gated_oja, the chunk transition and the gate at 1, in double
// (gated_oja_tests.hpp states them; bounds from checks/lowrank_bounds.hpp).
#include "gated_oja_tests.hpp"

using namespace ruleproof::lowrank_tests;
using S = double;

TEST_CASE("gated_oja_chunk_transition_is_the_product_of_its_steps/double", "[lowrank][double]") {
  gated_oja_chunk_transition_is_the_product_of_its_steps<S>();
}

TEST_CASE("gated_oja_with_gate_one_is_the_oja_rule/double", "[lowrank][double]") {
  gated_oja_with_gate_one_is_the_oja_rule<S>();
}
