// ruleproof property tests: gated_oja, every form, the chunk transition, the gate at 1 and
// the gradients, in double (gated_oja_tests.hpp states them; bounds from
// checks/lowrank_bounds.hpp).
#include "gated_oja_tests.hpp"

using namespace ruleproof::lowrank_tests;
using S = double;

TEST_CASE("gated_oja_chunkwise_equals_recurrent_every_chunk_size/double", "[lowrank][double]") {
  gated_oja_chunkwise_equals_recurrent_every_chunk_size<S>();
}

TEST_CASE("gated_oja_varlen_and_causality_are_exact/double", "[lowrank][double]") {
  gated_oja_varlen_and_causality_are_exact<S>();
}

TEST_CASE("gated_oja_two_halves_with_carried_state_equal_one_run/double", "[lowrank][double]") {
  gated_oja_two_halves_with_carried_state_equal_one_run<S>();
}

TEST_CASE("gated_oja_chunk_transition_is_the_product_of_its_steps/double", "[lowrank][double]") {
  gated_oja_chunk_transition_is_the_product_of_its_steps<S>();
}

TEST_CASE("gated_oja_with_gate_one_is_the_oja_rule/double", "[lowrank][double]") {
  gated_oja_with_gate_one_is_the_oja_rule<S>();
}

TEST_CASE("gated_oja_gradients_equal_dual_and_finite_differences/double", "[lowrank][double]") {
  gated_oja_gradients_equal_dual_and_finite_differences<S>();
}
