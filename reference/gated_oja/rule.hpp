// ruleproof: gated_oja (per-value gate, beta in (0, 1]): its signature and its forms on
// [B, T, H, K] tensors.
// Declared here, defined in the rule's own headers: a unit that includes this one alone calls
// the forms the truth library compiled (reference/truth/), and depends on no form's code.
#pragma once

#include "../core/heads.hpp"

namespace ruleproof::gated_oja {

inline const Signature signature{GateKind::value, true, 0.0, 1.0, 0, false};

template <Scalar S> Output<S> recurrent(const Inputs<S> &in, const Options &opts);
template <Scalar S> Output<S> parallel(const Inputs<S> &in, const Options &opts);
template <Scalar S> Output<S> chunk(const Inputs<S> &in, const Options &opts);
template <Scalar S>
Grads<S> chunk_backward(const Inputs<S> &in, const Cotangents<S> &ct, const Options &opts);

/// The largest cond_inf of the unit lower triangular systems of one head's chunks of size C
/// (I + A0, A its inverse): what the property checks' error bounds are amplified by.
template <Scalar S> double chunk_condition(const Head<S> &x, const S &scale, std::size_t C);

} // namespace ruleproof::gated_oja
