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

TEST_CASE("later_inputs_leave_earlier_outputs_bitwise_unchanged_extreme_gates/double",
          "[property][double]") {
  check_every_rule(scalar, Property::causality_extreme_gates);
}

TEST_CASE("chunk_backward_equals_finite_differences_equals_dual_extreme_gates/double",
          "[property][double]") {
  check_every_rule(scalar, Property::gradients_extreme_gates);
}
