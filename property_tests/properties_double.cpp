// ruleproof properties of every rule in rules::All, computed in double. The checks themselves
// live in checks/properties.hpp (shared with `ruleproof verify`); this file states them.
#include "checks/catch_property.hpp"

using ruleproof::checks::check_every_rule;
using ruleproof::checks::Property;
constexpr auto scalar = ruleproof::checks::ScalarKind::double_;

TEST_CASE("chunkwise_and_parallel_equal_recurrent_any_chunk_size/double", "[property][double]") {
  check_every_rule(scalar, Property::forms_agree);
}

TEST_CASE("varlen_equals_each_sequence_alone/double", "[property][double]") {
  check_every_rule(scalar, Property::varlen);
}

TEST_CASE("two_halves_with_carried_state_equal_one_run/double", "[property][double]") {
  check_every_rule(scalar, Property::halves);
}

TEST_CASE("later_inputs_leave_earlier_outputs_bitwise_unchanged/double", "[property][double]") {
  check_every_rule(scalar, Property::causality);
}

TEST_CASE("chunk_backward_equals_finite_differences_equals_dual/double", "[property][double]") {
  check_every_rule(scalar, Property::gradients);
}

TEST_CASE("extreme_gates_give_finite_results_equal_to_recurrent/double", "[property][double]") {
  check_every_rule(scalar, Property::extreme_gates);
}

// Known to fail in double (a reference bug, reported): gla's chunk form chooses between the
// factored exp(g_cum_i) exp(-g_cum_j) and the pairwise exp(g_cum_i - g_cum_j) from the decay
// span of the WHOLE chunk, so gates at t >= P change the rounding of outputs at t < P.
// [!mayfail] keeps the counterexample in every run's output without failing the suite;
// remove the tag once reference/gla/chunk.hpp decides per row.
TEST_CASE("later_inputs_leave_earlier_outputs_bitwise_unchanged_extreme_gates/double",
          "[property][double][!mayfail]") {
  check_every_rule(scalar, Property::causality_extreme_gates);
}
