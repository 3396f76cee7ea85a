// ruleproof property tests: dplr (three parameterisations) and iplr, the chunkwise analytic
// backward (dq, dk, dv, dg, da, db, dh0) against dual numbers and finite differences over
// the recurrent form, in float128. Replay with RC_PARAMS="seed=N" (the seed is logged).
#include "dplr_gradient_tests.hpp"

using namespace ruleproof;
using namespace ruleproof::lowrank_tests;

TEST_CASE("dplr_gradients_equal_dual_and_finite_differences") {
  log_seed();
  for (Rule r : dplr_rules)
    for (bool extreme : {false, true}) {
      if (extreme && r == Rule::iplr)
        continue;
      prop_cases(name_of(r) + (extreme ? " extreme gates" : ""), extreme ? 8 : 20, [r, extreme] {
        const Case c = draw_case(r, 7, 3, *rc::gen::arbitrary<bool>(), extreme);
        RC_LOG() << describe(c) << "\n";
        std::string why;
        const bool ok = gradients_agree(c, why);
        RC_LOG() << why;
        RC_ASSERT(ok);
      });
    }
}
