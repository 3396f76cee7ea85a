// ruleproof: the displayed equations of the seed notes that need no claim, each with its
// reason (proofs/coverage.hpp). Each quote is a verbatim excerpt of the row it is for.
#include "proofs/coverage.hpp"

namespace ruleproof::proofs::notes {

std::vector<NoClaimNeeded> no_claim_needed() { return {}; }

} // namespace ruleproof::proofs::notes
