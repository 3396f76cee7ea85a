// ruleproof property tests: dplr (three parameterisations) and iplr, their reductions, mappings,
// chunk transition and refusals in float128 (dplr_forward_tests.hpp states them; bounds from
// checks/lowrank_bounds.hpp).
#include "dplr_forward_tests.hpp"
#include "reference/core/float128.hpp"

using namespace ruleproof::lowrank_tests;
using S = ruleproof::float128;

TEST_CASE("dplr_reduces_to_kda/float128", "[lowrank][float128]") { dplr_reduces_to_kda<S>(); }

TEST_CASE("dplr_parameterisations_agree_under_the_mapping/float128", "[lowrank][float128]") {
  dplr_parameterisations_agree_under_the_mapping<S>();
}

TEST_CASE("iplr_is_dplr_fla_without_decay/float128", "[lowrank][float128]") {
  iplr_is_dplr_fla_without_decay<S>();
}

TEST_CASE("dplr_chunk_transition_is_the_product_of_its_steps/float128", "[lowrank][float128]") {
  dplr_chunk_transition_is_the_product_of_its_steps<S>();
}

TEST_CASE("dplr_rejects_bad_a_b/float128", "[lowrank][float128]") { dplr_rejects_bad_a_b<S>(); }
