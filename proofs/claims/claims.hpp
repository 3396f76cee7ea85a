// ruleproof: the registry of claims, one function a seed note.
#pragma once

#include <vector>

#include "proofs/claim.hpp"

namespace ruleproof::proofs::notes {

std::vector<Claim> seed_000_claims();
std::vector<Claim> seed_001_claims();
std::vector<Claim> seed_002_claims();
std::vector<Claim> seed_003_claims();
std::vector<Claim> seed_004_claims();

/// Every claim of the five notes, in the notes' order.
std::vector<Claim> all_claims();

} // namespace ruleproof::proofs::notes
