// ruleproof: how a claim is decided (DESIGN.md, Proofs).
//
// Exact first: both sides in exact rationals at `points` random draws. Equal at every draw:
// holds, with the Schwartz-Zippel bound (d / n)^points on a false identity passing, d the
// numerator degree of lhs - rhs as the arithmetic tracked it and n the size of the set each
// input is drawn from. Unequal at one draw: fails. Where a side leaves exact arithmetic (exp
// of a rational, a square root), MPFR at two precisions instead: the sides agree when their
// difference at the higher precision is within what rounding at that precision explains.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "claim.hpp"

namespace ruleproof::proofs {

enum class Verdict { holds, fails, ambiguous };
std::string to_string(Verdict v);

/// \brief The smallest failing draw found by shrinking the sizes.
struct Counterexample {
  Sizes sizes;
  std::uint64_t seed = 0; ///< the draw's seed: Draw(sizes, seed) reproduces it
  double error = 0;       ///< max |lhs - rhs| / max(|lhs|, |rhs|) there
  std::string note;       ///< e.g. the sides' shapes, when those differ
};

/// \brief One reading decided.
struct ReadingResult {
  std::string name, statement;
  Verdict verdict = Verdict::holds; ///< holds or fails
  std::string method;               ///< "exact rational" or "mpfr D digits"
  std::string why_not_exact;        ///< the operation that left exact arithmetic, if any
  double max_rel_error = 0;         ///< over the draws at the claim's sizes
  long long degree = 0;             ///< exact: numerator degree of lhs - rhs
  double set_size = 0;              ///< exact: size of the set each input is drawn from
  double failure_bound = 0;         ///< exact and holding: (degree / set_size)^points
  double threshold = 0;             ///< mpfr: the largest relative difference rounding explains
  int points = 0;
  std::optional<Counterexample> counterexample;
};

/// \brief A claim decided: its verdict, each reading's, and any problem with the claim
/// itself (a correction that does not hold).
struct ClaimResult {
  const Claim *claim = nullptr;
  Verdict verdict = Verdict::holds;
  std::vector<ReadingResult> readings;
  std::string problem;
};

struct EngineOptions {
  std::uint64_t seed = 1; ///< replays every draw
  int points = 4;         ///< random draws a reading must agree at
  unsigned mpfr_digits = 60;
};

/// The seed of a claim's draws: `seed` mixed with the claim's id, so a claim's draws do not
/// depend on which other claims run.
std::uint64_t claim_seed(const std::string &id, std::uint64_t seed);

/// (degree / set_size)^points, the Schwartz-Zippel bound on a false identity agreeing at
/// `points` independent draws; 1 when degree >= set_size (no information).
double schwartz_zippel_bound(long long degree, double set_size, int points);

ReadingResult decide_reading(const Reading &r, const Claim &c, const EngineOptions &o);

/// A claim's verdict from its readings': `ambiguous` only where they disagree (one holds,
/// another fails); where every reading fails it fails, whichever the note meant, and where
/// every reading holds it holds.
Verdict verdict_of_readings(const std::vector<ReadingResult> &readings);

/// Decides every reading, and the claim by `verdict_of_readings`. A correction
/// (`correction_of`) that does not hold is a problem.
ClaimResult decide(const Claim &c, const EngineOptions &o);

/// Decides claims on `threads` threads, in order of the input; `progress(done, total)`
/// after each.
std::vector<ClaimResult> decide_all(const std::vector<const Claim *> &claims,
                                    const EngineOptions &o, unsigned threads,
                                    const std::function<void(std::size_t, std::size_t)> &progress);

} // namespace ruleproof::proofs
