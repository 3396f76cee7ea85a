// ruleproof: kda (Kimi Delta Attention, per-key gate) and the driver of the delta-rule
// family: the family's options, kda's signature, and the forms on [B, T, H, K] tensors.
// Declared here, defined in the rule's own headers: a unit that includes this one alone calls
// the forms the truth library compiled (reference/truth/), and depends on no form's code.
#pragma once

#include "../core/heads.hpp"

namespace ruleproof::kda {

/// \brief Options of the delta-rule family, beside Options.
struct Variant {
  bool use_qk_l2norm = false;    ///< q, k -> x / sqrt(sum x^2 + eps) per row, inside the op
  double l2norm_eps = 1e-6;      ///< flash-linear-attention's l2norm eps
  bool allow_neg_eigval = false; ///< beta in (0, 2): I - beta k k^T nears eigenvalue -1
};

/// The inputs a rule of the family takes: its gate, and beta in (0, 1] or (0, 2).
inline Signature signature_of(GateKind gate, const Variant &var) {
  return {gate, true, 0.0, var.allow_neg_eigval ? 2.0 : 1.0, 0, false, var.allow_neg_eigval};
}

/// The driver of the delta-rule family (kda.hpp): every form of delta_rule (no gate),
/// gated_delta_rule (scalar gate) and kda (key gate).
namespace family {
template <Scalar S>
Output<S> recurrent(const Inputs<S> &in, const Options &opts, GateKind gate, const Variant &var);
template <Scalar S>
Output<S> parallel(const Inputs<S> &in, const Options &opts, GateKind gate, const Variant &var);
template <Scalar S>
Output<S> chunk(const Inputs<S> &in, const Options &opts, GateKind gate, const Variant &var);
template <Scalar S>
Grads<S> chunk_backward(const Inputs<S> &in, const Cotangents<S> &ct, const Options &opts,
                        GateKind gate, const Variant &var);
} // namespace family

inline const Signature signature = signature_of(GateKind::key, {});

template <Scalar S>
Output<S> recurrent(const Inputs<S> &in, const Options &opts, const Variant &var = {}) {
  return family::recurrent(in, opts, GateKind::key, var);
}

template <Scalar S>
Output<S> parallel(const Inputs<S> &in, const Options &opts, const Variant &var = {}) {
  return family::parallel(in, opts, GateKind::key, var);
}

template <Scalar S>
Output<S> chunk(const Inputs<S> &in, const Options &opts, const Variant &var = {}) {
  return family::chunk(in, opts, GateKind::key, var);
}

template <Scalar S>
Grads<S> chunk_backward(const Inputs<S> &in, const Cotangents<S> &ct, const Options &opts,
                        const Variant &var = {}) {
  return family::chunk_backward(in, ct, opts, GateKind::key, var);
}

/// The largest cond_inf of the unit lower triangular systems of one head's chunks of size C
/// (I + A0, A its inverse): what the property checks' error bounds are amplified by.
template <Scalar S> double chunk_condition(const Head<S> &x, const S &scale, std::size_t C);

} // namespace ruleproof::kda
