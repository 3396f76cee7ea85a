// ruleproof: which displayed equations of a seed note the claims cover.
//
// A note's displayed equations are found from its own delimiters, never listed by hand:
// $$ ... $$ (notes 000, 002), \[ ... \] (notes 001, 003), and in a note extracted from HTML
// (004, with no such delimiter) the lines that are a formula, not prose. Inside a display,
// each line of a derivation (split at \\; a line that begins with + or - continues the one
// before), each column of a row of equations side by side
// (split at a lone &) and each equation of a list (split at ",\quad" before another "=") is
// a row of its own, as is each numbered statement ("Proposition 2."). A claim covers the rows
// its quote lies in; a row no claim covers needs a reason, stated in the registry
// (`notes::no_claim_needed`).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "claim.hpp"

namespace ruleproof::proofs {

/// \brief One displayed equation (or numbered statement) of a note: where it lies in the
/// note's text.
struct Display {
  std::size_t begin = 0, end = 0; ///< byte offsets in the note, [begin, end)
  int line = 0;                   ///< the note's line it starts on, from 1
  std::string text;               ///< the note's text of it
};

/// Every displayed equation and numbered statement of a note, in order.
std::vector<Display> displays_of(const std::string &note);

/// \brief Why a displayed equation needs no claim (a definition, notation, a code
/// signature), stated beside the claims: `quote` is a verbatim excerpt of the row it is for,
/// and the reason holds for every row the same text appears in (a definition restated). A
/// claim covers only the place its quote is meant at (`Claim::occurrence`, the first unless
/// it says otherwise).
struct NoClaimNeeded {
  std::string file, quote, reason;
};

/// \brief A note's rows, each with the claims covering it or the reason it needs none.
struct NoteCoverage {
  std::string file;
  std::vector<Display> rows;
  std::vector<std::vector<std::string>> claims; ///< per row, the ids of the claims covering it
  std::vector<std::string> reasons;             ///< per row, why it needs no claim, if stated
  std::vector<std::string> problems; ///< a reason found nowhere, or in no row, or for a covered row
  /// The rows neither covered nor given a reason.
  std::vector<std::size_t> uncovered() const;
};

/// The coverage of one note (`file`, its text `note`) by the claims and reasons of that note.
NoteCoverage coverage_of(const std::string &file, const std::string &note,
                         const std::vector<const Claim *> &claims,
                         const std::vector<NoClaimNeeded> &reasons);

/// The coverage of every note the claims quote, each read from `seeds_dir`.
std::vector<NoteCoverage> coverage_of_notes(const std::vector<const Claim *> &claims,
                                            const std::vector<NoClaimNeeded> &reasons,
                                            const std::filesystem::path &seeds_dir);

/// Each note's problems, and a sentence for each row neither covered by a claim nor given a
/// reason: registry problems, as a quote not found is.
std::vector<std::string> coverage_problems(const std::vector<NoteCoverage> &notes);

/// What claims.md says in place of the coverage tables where the notes are not found.
inline const std::string coverage_not_computed =
    "\n## Coverage of the notes\n\nNot computed: the seed notes were not found (--seeds).\n";

/// The coverage tables of claims.md: per note, a count, then one line per row: its number,
/// line, an excerpt, and the claims covering it or the reason it needs none.
std::string coverage_markdown(const std::vector<NoteCoverage> &notes);

namespace notes {
/// The displayed equations that need no claim, with the reason for each (the registry's
/// proofs/claims/no_claim_needed.cpp).
std::vector<NoClaimNeeded> no_claim_needed();
} // namespace notes

} // namespace ruleproof::proofs
