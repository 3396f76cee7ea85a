// ruleproof: softmax attention: its position encodings and its forms on [B, T, H, K]
// tensors (no state; the gate, a scalar log-gate used as a bias, may be left out).
// Declared here, defined in the rule's own headers: a unit that includes this one alone calls
// the forms the truth library compiled (reference/truth/), and depends on no form's code.
#pragma once

#include "../core/validate.hpp"

namespace ruleproof::softmax_attn {

/// \brief The position encodings, all off by default. Positions count from 0 within
/// each sequence; rotary pairs coordinates (2c, 2c+1) with angle t theta_c,
/// theta_c = base^(-2c/d), d the (even) dimension it rotates.
struct Encoding {
  double alibi_slope = 0; ///< m >= 0: bias -m (i - j), the same for every head
  bool rope_qk = false;   ///< q_i -> R_i q_i, k_j -> R_j k_j
  bool rope_vo = false;   ///< v_j -> R_j v_j, o_i -> R_i^T o_i
  double rope_base = 10000;
};

template <Scalar S> Output<S> parallel(const Inputs<S> &in, Options opts, const Encoding &enc = {});
template <Scalar S>
Output<S> recurrent(const Inputs<S> &in, Options opts, const Encoding &enc = {});
template <Scalar S> Output<S> chunk(const Inputs<S> &in, Options opts, const Encoding &enc = {});
template <Scalar S>
Grads<S> chunk_backward(const Inputs<S> &in, const Cotangents<S> &ct, Options opts,
                        const Encoding &enc = {});

} // namespace ruleproof::softmax_attn
