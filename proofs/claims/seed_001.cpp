// ruleproof: the claims of seed 001 (diagonal plus low rank).
#include "claims.hpp"
#include "common.hpp"

namespace ruleproof::proofs::notes {

std::vector<Claim> seed_001_claims() { return {}; }

} // namespace ruleproof::proofs::notes
