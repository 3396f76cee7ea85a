// ruleproof: gla (per-key gate): its signature and its forms on [B, T, H, K] tensors.
// Declared here, defined in the rule's own headers: a unit that includes this one alone calls
// the forms the truth library compiled (reference/truth/), and depends on no form's code.
#pragma once

#include "../core/validate.hpp"

namespace ruleproof::gla {

inline const Signature signature{GateKind::key};

template <Scalar S> Output<S> recurrent(const Inputs<S> &in, const Options &opts);
template <Scalar S> Output<S> parallel(const Inputs<S> &in, const Options &opts);
template <Scalar S> Output<S> chunk(const Inputs<S> &in, const Options &opts);
template <Scalar S>
Grads<S> chunk_backward(const Inputs<S> &in, const Cotangents<S> &ct, const Options &opts);

} // namespace ruleproof::gla
