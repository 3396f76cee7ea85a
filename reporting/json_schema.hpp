// ruleproof: a validator for the part of JSON Schema (draft 2020-12) the result format's schema
// uses (reporting/schema/result-v1.schema.json): type (a name or a list), enum, const, minimum,
// properties, required, additionalProperties (false or a schema), items, anyOf, and $ref to
// "#/$defs/<name>". Any other keyword in a schema is refused, so the schema cannot say more
// than this validator checks.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ruleproof::reports {

/// \brief Every place where `doc` breaks `schema`, as "<JSON pointer>: <problem>"; empty when
/// it conforms. Throws std::invalid_argument when the schema uses a keyword outside the
/// subset above or a $ref that does not resolve.
std::vector<std::string> schema_violations(const nlohmann::json &schema, const nlohmann::json &doc);

} // namespace ruleproof::reports
