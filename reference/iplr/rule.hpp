// ruleproof: iplr (identity plus low rank): its signature and its forms on [B, T, H, K] tensors.
// Declared here, defined in the rule's own headers: a unit that includes this one alone calls
// the forms the truth library compiled (reference/truth/), and depends on no form's code.
#pragma once

#include "../core/validate.hpp"

namespace ruleproof::iplr {

inline const Signature signature{GateKind::none, false, 0.0, 1.0, 0, true};

template <Scalar S> Output<S> recurrent(const Inputs<S> &in, const Options &opts);
template <Scalar S> Output<S> parallel(const Inputs<S> &in, const Options &opts);
template <Scalar S> Output<S> chunk(const Inputs<S> &in, const Options &opts);
template <Scalar S>
Grads<S> chunk_backward(const Inputs<S> &in, const Cotangents<S> &ct, const Options &opts);

} // namespace ruleproof::iplr
