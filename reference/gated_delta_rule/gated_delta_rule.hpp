// ruleproof: gated_delta_rule with its forms' code: rule.hpp's forms, which forward to the
// delta-rule family's driver (kda.hpp).
#pragma once

#include "../kda/kda.hpp"
#include "rule.hpp"
