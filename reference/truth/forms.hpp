// ruleproof: the truth library. Every rule's forms (recurrent, parallel, chunk and
// chunk_backward in S; recurrent in Dual<S>; the chunks' condition numbers of the rules whose
// error bounds need them) compiled once per scalar, in reference/truth/scalar.cpp.in
// (configured by reference/truth/CMakeLists.txt), and declared `extern template` here (double
// and long double) and in float128.hpp and mpfr.hpp. This header includes the registry
// (reference/rules.hpp), which includes only each rule's declarations (reference/*/rule.hpp):
// a unit that includes it calls the compiled forms and depends on none of their code, so
// editing a form recompiles the truth library and the units that include that form's header.
// Opt-in, as float128 and MPFR are: a unit that includes a rule's own header (gla/gla.hpp)
// can still instantiate its forms in any scalar; truth.hpp declares every scalar.
//
// In the double-only build (RULEPROOF_DOUBLE_ONLY, the sanitizer build) double alone.
#pragma once

#include "reference/core/dual.hpp"
#include "reference/rules.hpp"

// The forward forms of rule namespace NS in scalar S, each taking the extra arguments __VA_ARGS__
// after (inputs, options); PREFIX is `extern` for the declaration, empty for the definition.
#define RULEPROOF_TRUTH_FORWARD(PREFIX, NS, S, ...)                                                \
  PREFIX template Output<S> NS::recurrent<S>(const Inputs<S> &, __VA_ARGS__);                      \
  PREFIX template Output<S> NS::parallel<S>(const Inputs<S> &, __VA_ARGS__);                       \
  PREFIX template Output<S> NS::chunk<S>(const Inputs<S> &, __VA_ARGS__)
#define RULEPROOF_TRUTH_BACKWARD(PREFIX, NS, S, ...)                                               \
  PREFIX template Grads<S> NS::chunk_backward<S>(const Inputs<S> &, const Cotangents<S> &,         \
                                                 __VA_ARGS__)
// Both, in S, and the recurrent form in Dual<S> (the dual numbers the gradients are checked
// against differentiate the recurrent form).
#define RULEPROOF_TRUTH_RULE(PREFIX, NS, S, ...)                                                   \
  RULEPROOF_TRUTH_FORWARD(PREFIX, NS, S, __VA_ARGS__);                                             \
  PREFIX template Output<Dual<S>> NS::recurrent<Dual<S>>(const Inputs<Dual<S>> &, __VA_ARGS__);    \
  RULEPROOF_TRUTH_BACKWARD(PREFIX, NS, S, __VA_ARGS__)

// The largest condition number of a head's chunks (the error bounds' amplification), in S.
#define RULEPROOF_TRUTH_CONDITION(PREFIX, NS, S)                                                   \
  PREFIX template double NS::chunk_condition<S>(const Head<S> &, const S &, std::size_t)

// The rules of each bound family (rules::BoundFamily), by the namespace that computes them:
// delta_rule and gated_delta_rule run kda::family, linear_attn's variants linear_attn's forms.
#define RULEPROOF_TRUTH_nonnegative_transition(PREFIX, S)                                          \
  RULEPROOF_TRUTH_RULE(PREFIX, gla, S, const Options &);                                           \
  RULEPROOF_TRUTH_RULE(PREFIX, simple_gla, S, const Options &);                                    \
  RULEPROOF_TRUTH_RULE(PREFIX, linear_attn, S, const Options &, const linear_attn::Variant &)
#define RULEPROOF_TRUTH_contraction(PREFIX, S)                                                     \
  RULEPROOF_TRUTH_RULE(PREFIX, kda::family, S, const Options &, GateKind, const kda::Variant &);   \
  RULEPROOF_TRUTH_CONDITION(PREFIX, kda, S)
#define RULEPROOF_TRUTH_low_rank(PREFIX, S)                                                        \
  RULEPROOF_TRUTH_RULE(PREFIX, dplr, S, const Options &, const dplr::Variant &);                   \
  RULEPROOF_TRUTH_RULE(PREFIX, iplr, S, const Options &);                                          \
  RULEPROOF_TRUTH_RULE(PREFIX, gated_oja, S, const Options &);                                     \
  RULEPROOF_TRUTH_CONDITION(PREFIX, dplr, S);                                                      \
  RULEPROOF_TRUTH_CONDITION(PREFIX, gated_oja, S)
#define RULEPROOF_TRUTH_softmax(PREFIX, S)                                                         \
  RULEPROOF_TRUTH_RULE(PREFIX, softmax_attn, S, Options, const softmax_attn::Encoding &)

// Every family in S.
#define RULEPROOF_TRUTH_ALL(PREFIX, S)                                                             \
  RULEPROOF_TRUTH_nonnegative_transition(PREFIX, S);                                               \
  RULEPROOF_TRUTH_contraction(PREFIX, S);                                                          \
  RULEPROOF_TRUTH_low_rank(PREFIX, S);                                                             \
  RULEPROOF_TRUTH_softmax(PREFIX, S)

#ifdef RULEPROOF_DOUBLE_ONLY
// The library holds double alone: a unit that calls a form in another scalar instantiates it.
#include "definitions.hpp"
#endif

namespace ruleproof {
RULEPROOF_TRUTH_ALL(extern, double);
#ifndef RULEPROOF_DOUBLE_ONLY
RULEPROOF_TRUTH_ALL(extern, long double);
#endif
} // namespace ruleproof
