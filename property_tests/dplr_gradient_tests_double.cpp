// ruleproof property tests: dplr (three parameterisations) and iplr, the chunkwise analytic
// backward against dual numbers and finite differences, in double (dplr_gradient_tests.hpp).
#include "dplr_gradient_tests.hpp"

using namespace ruleproof::lowrank_tests;
using S = double;

TEST_CASE("dplr_gradients_equal_dual_and_finite_differences/double", "[lowrank][double]") {
  dplr_gradients_equal_dual_and_finite_differences<S>();
}
