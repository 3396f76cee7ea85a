// ruleproof property tests: dplr (three parameterisations) and iplr, their reductions, mappings,
// chunk transition and refusals in double (dplr_forward_tests.hpp states them; bounds from
// checks/lowrank_bounds.hpp).
#include "dplr_forward_tests.hpp"

using namespace ruleproof::lowrank_tests;
using S = double;

TEST_CASE("dplr_reduces_to_kda/double", "[lowrank][double]") { dplr_reduces_to_kda<S>(); }

TEST_CASE("dplr_parameterisations_agree_under_the_mapping/double", "[lowrank][double]") {
  dplr_parameterisations_agree_under_the_mapping<S>();
}

TEST_CASE("iplr_is_dplr_fla_without_decay/double", "[lowrank][double]") {
  iplr_is_dplr_fla_without_decay<S>();
}

TEST_CASE("dplr_chunk_transition_is_the_product_of_its_steps/double", "[lowrank][double]") {
  dplr_chunk_transition_is_the_product_of_its_steps<S>();
}

TEST_CASE("dplr_rejects_bad_a_b/double", "[lowrank][double]") { dplr_rejects_bad_a_b<S>(); }
