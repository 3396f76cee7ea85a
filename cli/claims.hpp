// ruleproof claims: decides every claim of the seed notes, prints a table and writes
// claims.json and claims.md.
#pragma once

#include <CLI/CLI.hpp>

namespace ruleproof::cli {

/// Registers `ruleproof claims`; when it runs it sets `status`: 0 when every claim was
/// decided and the registry is sound (every correction holds, every quote verbatim), 1
/// otherwise, 2 for an unknown claim or note.
void add_claims_command(CLI::App &app, int &status);

} // namespace ruleproof::cli
