// ruleproof: the truth library's forms in float128 (forms.hpp), declared `extern template`.
#pragma once

#include "forms.hpp"
#include "reference/core/float128.hpp"

#ifndef RULEPROOF_DOUBLE_ONLY
namespace ruleproof {
RULEPROOF_TRUTH_ALL(extern, float128);
} // namespace ruleproof
#endif
