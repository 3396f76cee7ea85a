// ruleproof properties of every rule in rules::All, computed in MPFR at 50 digits (the
// deeper truth): the same checks as properties_float128.cpp, fewer cases.
#include "checks/catch_property.hpp"

using ruleproof::checks::check_every_rule;
using ruleproof::checks::Property;
constexpr auto scalar = ruleproof::checks::ScalarKind::mpfr;

TEST_CASE("chunkwise_and_parallel_equal_recurrent_any_chunk_size/mpfr", "[property][mpfr]") {
  check_every_rule(scalar, Property::forms_agree);
}

TEST_CASE("varlen_equals_each_sequence_alone/mpfr", "[property][mpfr]") {
  check_every_rule(scalar, Property::varlen);
}

TEST_CASE("chunk_backward_equals_finite_differences_equals_dual/mpfr", "[property][mpfr]") {
  check_every_rule(scalar, Property::gradients);
}
