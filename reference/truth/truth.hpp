// ruleproof: the truth library in every scalar it is compiled for (forms.hpp): include this,
// not the rules' headers, to call the compiled forms.
#pragma once

#include "float128.hpp"
#include "forms.hpp"
#include "mpfr.hpp"
