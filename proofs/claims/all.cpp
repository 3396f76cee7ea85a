// ruleproof: every claim of the five notes, in the notes' order.
#include "claims.hpp"

namespace ruleproof::proofs::notes {

std::vector<Claim> all_claims() {
  std::vector<Claim> all;
  for (auto note :
       {seed_000_claims, seed_001_claims, seed_002_claims, seed_003_claims, seed_004_claims})
    for (Claim &c : note())
      all.push_back(std::move(c));
  return all;
}

} // namespace ruleproof::proofs::notes
