// ruleproof property tests: dplr (three parameterisations) and iplr, the chunkwise analytic
// backward against dual numbers and finite differences, in float128 (dplr_gradient_tests.hpp).
#include "dplr_gradient_tests.hpp"
#include "reference/core/float128.hpp"

using namespace ruleproof::lowrank_tests;
using S = ruleproof::float128;

TEST_CASE("dplr_gradients_equal_dual_and_finite_differences/float128", "[lowrank][float128]") {
  dplr_gradients_equal_dual_and_finite_differences<S>();
}
