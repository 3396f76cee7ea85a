// ruleproof: what the claims engine reports: the registry's own checks (quotes verbatim,
// ids unique, corrections naming a claim), the terminal table, claims.json and claims.md.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine.hpp"

namespace ruleproof::proofs {

/// \brief Problems with the registry itself, each a sentence naming the claim: a quote
/// that is not 20 to 200 characters or not found verbatim in its note (when `seeds_dir`
/// holds the notes), an id used twice, a correction naming no claim, a claim with no
/// reading.
std::vector<std::string> registry_problems(const std::vector<const Claim *> &claims,
                                           const std::vector<Claim> &all,
                                           const std::filesystem::path &seeds_dir,
                                           bool check_quotes);

/// The reading a claim's line shows: its first failing reading, else its first.
const ReadingResult *shown_reading(const ClaimResult &r);

/// For an ambiguous claim, the readings under which it holds and those under which it
/// fails ("holds read as \"a\"; fails read as \"b\""); empty for any other.
std::string readings_summary(const ClaimResult &r);

/// The terminal table: id, source, verdict, error, counterexample; a summary per note.
std::string table(const std::vector<ClaimResult> &results);

nlohmann::json to_json(const std::vector<ClaimResult> &results, const EngineOptions &o);

/// claims.md: the counts per note, a table per note, then every claim that fails or is
/// ambiguous with its quote, readings and smallest counterexample. Nothing in it depends
/// on the machine or the time, so the committed copy can be compared with a fresh one.
std::string to_markdown(const std::vector<ClaimResult> &results, const EngineOptions &o);

} // namespace ruleproof::proofs
