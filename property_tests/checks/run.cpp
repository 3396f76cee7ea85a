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
    if (r.name() == name)
      return r;
  throw std::invalid_argument("unknown rule '" + name + "'");
}

std::vector<RuleInfo> sympow_infos() {
  struct Variant {
    const char *name;
    bool gated, rotary, rates;
  };
  const Variant variants[] = {{"plain", false, false, false},
                              {"fixed_rotary", false, true, false},
                              {"gated", true, false, false},
                              {"data_dependent_rotation", false, true, true},
                              {"gated_data_dependent_rotation", true, true, true}};
  std::vector<RuleInfo> infos;
  for (const Variant &v : variants)
    for (int p : {1, 2, 3, 4, 6}) {
      RuleInfo r;
      r.power = p;
      r.normalise = p % 2 == 0;
      r.rotary = v.rotary;
      r.gate = v.gated ? GateKind::scalar : GateKind::none;
      r.has_beta = v.rates, r.beta_low = 0, r.beta_high = 2;
      r.sympow_name =
          "sympow_p" + std::to_string(p) + (r.normalise ? "_normalised_" : "_") + v.name;
      infos.push_back(r);
    }
  return infos;
}

std::vector<ScalarKind> compiled_scalars() {
#ifdef RULEPROOF_DOUBLE_ONLY
  return {ScalarKind::double_};
#else
  return {ScalarKind::double_, ScalarKind::long_double, ScalarKind::float128, ScalarKind::mpfr};
#endif
}

#ifdef RULEPROOF_DOUBLE_ONLY
void set_check_mpfr_digits(unsigned) {} // no check runs in MPFR in this build
#endif

void refuse_uncompiled(ScalarKind s) {
  throw std::invalid_argument("the checks are compiled in double alone in this build "
                              "(RULEPROOF_DOUBLE_ONLY, the sanitizer build), not in " +
                              name_of(s));
}

Report run_check(ScalarKind s, Property p, const std::string &rule, const Case &c) {
  if (rule.rfind("sympow", 0) == 0)
    return run_sympow_check(s, p, rule, c);
  switch (s) {
  case ScalarKind::double_: return run_check_double(p, rule, c);
#ifdef RULEPROOF_DOUBLE_ONLY
  default: refuse_uncompiled(s);
#else
  case ScalarKind::long_double: return run_check_long_double(p, rule, c);
  case ScalarKind::float128: return run_check_float128(p, rule, c);
  case ScalarKind::mpfr: return run_check_mpfr(p, rule, c);
#endif
  }
  throw std::invalid_argument("unknown scalar");
}

} // namespace ruleproof::checks
