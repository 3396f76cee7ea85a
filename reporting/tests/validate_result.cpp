// validate_result SCHEMA FILE...: checks each result file against the JSON Schema and reads it
// back with read_run; prints every violation and exits 1 when any file breaks the format.
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "reporting/json_schema.hpp"
#include "reporting/result.hpp"

int main(int argc, char **argv) {
  if (argc < 3) {
    std::cerr << "usage: validate_result SCHEMA FILE...\n";
    return 2;
  }
  std::ifstream schema_in(argv[1]);
  const nlohmann::json schema = nlohmann::json::parse(schema_in);
  int status = 0;
  for (int i = 2; i < argc; ++i) {
    std::ifstream in(argv[i]);
    if (!in) {
      std::cerr << argv[i] << ": cannot be read\n";
      status = 1;
      continue;
    }
    const nlohmann::json doc = nlohmann::json::parse(in, nullptr, false);
    if (doc.is_discarded()) {
      std::cerr << argv[i] << ": not JSON\n";
      status = 1;
      continue;
    }
    const std::vector<std::string> problems = ruleproof::reports::schema_violations(schema, doc);
    for (const std::string &p : problems)
      std::cerr << argv[i] << ": " << p << "\n";
    try {
      ruleproof::reports::read_run(argv[i]);
    } catch (const std::exception &e) {
      std::cerr << e.what() << "\n";
      status = 1;
    }
    if (!problems.empty())
      status = 1;
    else
      std::cout << argv[i] << ": conforms to " << argv[1] << " (" << doc["results"].size()
                << " results)\n";
  }
  return status;
}
