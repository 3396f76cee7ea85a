// ruleproof: the JSON Schema subset validator (json_schema.hpp).
#include "json_schema.hpp"

#include <algorithm>
#include <set>
#include <stdexcept>

namespace ruleproof::reports {

namespace {

const std::set<std::string> known_keywords{
    "$schema", "$id",   "$defs",   "$ref",       "title",    "description",          "type",
    "enum",    "const", "minimum", "properties", "required", "additionalProperties", "items",
    "anyOf"};

bool has_type(const nlohmann::json &x, const std::string &type) {
  if (type == "null")
    return x.is_null();
  if (type == "boolean")
    return x.is_boolean();
  if (type == "object")
    return x.is_object();
  if (type == "array")
    return x.is_array();
  if (type == "string")
    return x.is_string();
  if (type == "number")
    return x.is_number();
  if (type == "integer")
    return x.is_number_integer();
  throw std::invalid_argument("schema: unknown type '" + type + "'");
}

struct Validator {
  const nlohmann::json &root;
  std::vector<std::string> problems;

  const nlohmann::json &resolve(const std::string &ref) const {
    const std::string prefix = "#/$defs/";
    if (ref.rfind(prefix, 0) != 0 || !root.contains("$defs") ||
        !root["$defs"].contains(ref.substr(prefix.size())))
      throw std::invalid_argument("schema: $ref '" + ref + "' does not resolve");
    return root["$defs"][ref.substr(prefix.size())];
  }

  void check(const nlohmann::json &schema, const nlohmann::json &x, const std::string &at) {
    if (!schema.is_object())
      throw std::invalid_argument("schema at " + at + ": not an object");
    for (const auto &[key, value] : schema.items())
      if (!known_keywords.count(key))
        throw std::invalid_argument("schema at " + at + ": keyword '" + key +
                                    "' is outside the subset this validator checks");
    const std::string here = at.empty() ? "/" : at;
    if (schema.contains("$ref"))
      check(resolve(schema["$ref"].get<std::string>()), x, at);
    if (schema.contains("type")) {
      const nlohmann::json &t = schema["type"];
      const std::vector<std::string> types =
          t.is_array() ? t.get<std::vector<std::string>>() : std::vector<std::string>{t};
      if (std::none_of(types.begin(), types.end(),
                       [&](const std::string &s) { return has_type(x, s); })) {
        problems.push_back(here + ": " + x.dump() + " is not of type " + t.dump());
        return;
      }
    }
    if (schema.contains("const") && x != schema["const"])
      problems.push_back(here + ": " + x.dump() + " is not " + schema["const"].dump());
    if (schema.contains("enum")) {
      const nlohmann::json &e = schema["enum"];
      if (std::find(e.begin(), e.end(), x) == e.end())
        problems.push_back(here + ": " + x.dump() + " is not one of " + e.dump());
    }
    if (schema.contains("minimum") && x.is_number() &&
        x.get<double>() < schema["minimum"].get<double>())
      problems.push_back(here + ": " + x.dump() + " is below the minimum " +
                         schema["minimum"].dump());
    if (schema.contains("anyOf")) {
      bool any = false;
      for (const nlohmann::json &option : schema["anyOf"]) {
        Validator v{root, {}};
        v.check(option, x, at);
        any = any || v.problems.empty();
      }
      if (!any)
        problems.push_back(here + ": " + x.dump() + " matches none of anyOf");
    }
    if (x.is_object()) {
      if (schema.contains("required"))
        for (const nlohmann::json &name : schema["required"])
          if (!x.contains(name.get<std::string>()))
            problems.push_back(here + ": required property \"" + name.get<std::string>() +
                               "\" is missing");
      const nlohmann::json no_properties = nlohmann::json::object();
      const nlohmann::json &properties =
          schema.contains("properties") ? schema["properties"] : no_properties;
      for (const auto &[key, value] : x.items()) {
        const std::string below = at + "/" + key;
        if (properties.contains(key))
          check(properties[key], value, below);
        else if (schema.contains("additionalProperties")) {
          const nlohmann::json &extra = schema["additionalProperties"];
          if (extra.is_boolean()) {
            if (!extra.get<bool>())
              problems.push_back(here + ": property \"" + key + "\" is not allowed");
          } else {
            check(extra, value, below);
          }
        }
      }
    }
    if (x.is_array() && schema.contains("items"))
      for (std::size_t i = 0; i < x.size(); ++i)
        check(schema["items"], x[i], at + "/" + std::to_string(i));
  }
};

} // namespace

std::vector<std::string> schema_violations(const nlohmann::json &schema,
                                           const nlohmann::json &doc) {
  Validator v{schema, {}};
  v.check(schema, doc, "");
  return v.problems;
}

} // namespace ruleproof::reports
