// ruleproof: the truth library's forms in mpfr (forms.hpp), declared `extern template`.
#pragma once

#include "forms.hpp"
#include "reference/core/mpfr.hpp"

#ifndef RULEPROOF_DOUBLE_ONLY
namespace ruleproof {
RULEPROOF_TRUTH_ALL(extern, mpfr);
} // namespace ruleproof
#endif
