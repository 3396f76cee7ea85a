// ruleproof property checks: the rule table and the dispatch on the scalar type.
#include <stdexcept>

#include "properties.hpp"
#include "run.hpp"

namespace ruleproof::checks {

std::vector<RuleInfo> rule_infos() {
  std::vector<RuleInfo> infos;
  rules::for_each_rule([&](auto tag) { infos.push_back(info_of<decltype(tag)>()); });
  return infos;
}

RuleInfo rule_info(const std::string &name) {
  for (const RuleInfo &r : rule_infos())
    if (r.name == name)
      return r;
  throw std::invalid_argument("unknown rule '" + name + "'");
}

Report run_check(ScalarKind s, Property p, const std::string &rule, const Case &c) {
  switch (s) {
  case ScalarKind::double_: return run_check_double(p, rule, c);
  case ScalarKind::long_double: return run_check_long_double(p, rule, c);
  case ScalarKind::float128: return run_check_float128(p, rule, c);
  }
  throw std::invalid_argument("unknown scalar");
}

} // namespace ruleproof::checks
