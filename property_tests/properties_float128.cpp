// ruleproof properties of every rule in rules::All, computed in float128. The checks themselves
// live in checks/properties.hpp (shared with `ruleproof verify`); this file states them.
#include <cmath>
#include <limits>

#include "checks/catch_property.hpp"
#include "checks/properties.hpp"
#include "reference/core/float128.hpp"

using ruleproof::checks::check_every_rule;
using ruleproof::checks::Property;
constexpr auto scalar = ruleproof::checks::ScalarKind::float128;

TEST_CASE("chunkwise_and_parallel_equal_recurrent_any_chunk_size/float128",
          "[property][float128]") {
  check_every_rule(scalar, Property::forms_agree);
}

TEST_CASE("varlen_equals_each_sequence_alone/float128", "[property][float128]") {
  check_every_rule(scalar, Property::varlen);
}

TEST_CASE("two_halves_with_carried_state_equal_one_run/float128", "[property][float128]") {
  check_every_rule(scalar, Property::halves);
}

TEST_CASE("later_inputs_leave_earlier_outputs_bitwise_unchanged/float128", "[property][float128]") {
  check_every_rule(scalar, Property::causality);
}

TEST_CASE("chunk_backward_equals_finite_differences_equals_dual/float128", "[property][float128]") {
  check_every_rule(scalar, Property::gradients);
}

TEST_CASE("extreme_gates_give_finite_results_equal_to_recurrent/float128", "[property][float128]") {
  check_every_rule(scalar, Property::extreme_gates);
}

TEST_CASE("later_inputs_leave_earlier_outputs_bitwise_unchanged_extreme_gates/float128",
          "[property][float128]") {
  check_every_rule(scalar, Property::causality_extreme_gates);
}

TEST_CASE("chunk_backward_equals_finite_differences_equals_dual_extreme_gates/float128",
          "[property][float128]") {
  check_every_rule(scalar, Property::gradients_extreme_gates);
}

TEST_CASE("a_measure_keeps_the_error_of_values_that_round_to_one_double", "[property][float128]") {
  // 1 and 1 + 2^-80 are one double apart by nothing: the error a Measure records must be taken
  // in float128, where it is 2^-80, and agree with the ratio it records (0.5 of a bound 2^-79).
  using ruleproof::float128;
  using ruleproof::Tensor;
  const Tensor<float128> a({1}, float128(1)), b({1}, float128(1) + ldexp(float128(1), -80)),
      bound({1}, ldexp(float128(1), -79));
  ruleproof::checks::Measure m("chunk", "recurrent");
  ruleproof::checks::detail::measure(m, "o", a, b, bound);
  CHECK(m.worst_ratio == 0.5);
  CHECK(m.worst_error == std::ldexp(1.0, -80));
  CHECK(m.worst_bound == std::ldexp(1.0, -79));
  CHECK(ruleproof::digits_agreed(0.01) == Approx(2.0));
  CHECK(ruleproof::digits_agreed(3.0) == 0.0); // no digit agrees: never negative
  CHECK(ruleproof::digits_agreed(0.0) == std::numeric_limits<double>::infinity());
}
