// ruleproof: parsing JSON that comes from a file, for every reader (safetensors headers, result
// files, `ruleproof run` inputs).
//
// nlohmann::json parses without recursion, but copying, printing and comparing a value recurse
// once per level of nesting: a file of a million '[' would overflow the stack there. So the
// readers refuse nesting deeper than any file ruleproof reads needs, while parsing.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace ruleproof::io {

/// The deepest nesting of arrays and objects a reader accepts (result files nest 4 deep, a
/// "details" object a few more).
inline constexpr int max_json_depth = 64;

/// \brief A parsed text: its value, or why it is not JSON (error not empty, value null).
struct ParsedJson {
  nlohmann::json value;
  std::string error;
};

/// Parses text as JSON nested at most max_json_depth deep.
inline ParsedJson parse_json(std::string_view text) {
  struct TooDeep {};
  // An array or object starts at `depth`, the number of those around it.
  const auto bound_depth = [](int depth, nlohmann::json::parse_event_t event, nlohmann::json &) {
    using event_t = nlohmann::json::parse_event_t;
    if ((event == event_t::array_start || event == event_t::object_start) &&
        depth >= max_json_depth)
      throw TooDeep{};
    return true;
  };
  try {
    return {nlohmann::json::parse(text, bound_depth), ""};
  } catch (const nlohmann::json::exception &e) {
    return {nullptr, e.what()};
  } catch (const TooDeep &) {
    return {nullptr, "nested more than " + std::to_string(max_json_depth) + " levels deep"};
  }
}

} // namespace ruleproof::io
