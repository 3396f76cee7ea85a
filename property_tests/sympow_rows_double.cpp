// sympow's rows of `ruleproof verify` (every variant and power of sympow_infos()) in double:
// the properties of checks/ beside forms agree and gradients (which sympow_forms_<scalar>.cpp
// and sympow_grads_float128.cpp state with draws of their own), through the one implementation
// verify runs (checks/sympow_checks.hpp). Ungated rows warn that the extreme-gate properties
// do not apply to them (no gate).
#include "checks/catch_property.hpp"

using ruleproof::checks::check_every_rule;
using ruleproof::checks::Property;
using ruleproof::checks::sympow_infos;
constexpr auto scalar = ruleproof::checks::ScalarKind::double_;

TEST_CASE("varlen_equals_each_sequence_alone/sympow/double", "[sympow][double]") {
  check_every_rule(scalar, Property::varlen, sympow_infos());
}

TEST_CASE("two_halves_with_carried_state_equal_one_run/sympow/double", "[sympow][double]") {
  check_every_rule(scalar, Property::halves, sympow_infos());
}

TEST_CASE("later_inputs_leave_earlier_outputs_bitwise_unchanged/sympow/double",
          "[sympow][double]") {
  check_every_rule(scalar, Property::causality, sympow_infos());
}

TEST_CASE("extreme_gates_give_finite_results_equal_to_recurrent/sympow/double",
          "[sympow][double]") {
  check_every_rule(scalar, Property::extreme_gates, sympow_infos());
}

TEST_CASE("later_inputs_leave_earlier_outputs_bitwise_unchanged_extreme_gates/sympow/double",
          "[sympow][double]") {
  check_every_rule(scalar, Property::causality_extreme_gates, sympow_infos());
}

TEST_CASE("chunk_backward_equals_finite_differences_equals_dual_extreme_gates/sympow/double",
          "[sympow][double]") {
  check_every_rule(scalar, Property::gradients_extreme_gates, sympow_infos());
}
