// ruleproof properties of every rule in rules::All, computed in double. The checks themselves
// live in checks/properties.hpp (shared with `ruleproof verify`); this file states them.
#include <vector>

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

// The registry's table (reference/rule_id.hpp) states each rule's gate, beta and low-rank pair
// without its headers, for the kernels' code and the light checks: it must say what the
// rule's Signature says.
TEST_CASE("registry_table_agrees_with_every_rule_signature", "[registry]") {
  const std::vector<ruleproof::checks::RuleInfo> infos = ruleproof::checks::rule_infos();
  REQUIRE(infos.size() == ruleproof::rule_table.size());
  for (std::size_t i = 0; i < infos.size(); ++i) {
    const ruleproof::checks::RuleInfo &r = infos[i];
    INFO(r.name());
    CHECK(r.id == ruleproof::rule_table[i].id);
    CHECK(r.name() == ruleproof::rule_table[i].name);
    CHECK(ruleproof::gate_of(r.id) == r.gate);
    CHECK(ruleproof::has_beta(r.id) == r.has_beta);
    CHECK(ruleproof::has_ab(r.id) == r.has_ab);
  }
}
