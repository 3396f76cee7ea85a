// ruleproof: the code of every rule's forms, for the units that compile the truth library
// (scalar.cpp.in) and, in the double-only build, for every unit that calls a form in a scalar
// the library does not hold (forms.hpp).
#pragma once

#include "reference/delta_rule/delta_rule.hpp"
#include "reference/dplr/dplr.hpp"
#include "reference/gated_delta_rule/gated_delta_rule.hpp"
#include "reference/gated_oja/gated_oja.hpp"
#include "reference/gla/gla.hpp"
#include "reference/iplr/iplr.hpp"
#include "reference/kda/kda.hpp"
#include "reference/linear_attn/linear_attn.hpp"
#include "reference/simple_gla/simple_gla.hpp"
#include "reference/softmax_attn/softmax_attn.hpp"
