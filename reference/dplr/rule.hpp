// ruleproof: dplr (diagonal plus low rank, per-key gate): its three parameterisations
// (recurrent.hpp writes each out), its signature and its forms on [B, T, H, K] tensors.
// Declared here, defined in the rule's own headers: a unit that includes this one alone calls
// the forms the truth library compiled (reference/truth/), and depends on no form's code.
#pragma once

#include <string>

#include "../core/heads.hpp"

namespace ruleproof::dplr {

/// \brief Which of the three DPLR recurrences the tensors a, b (and g) are meant for.
enum class Parameterisation {
  seed,   ///< seed 001: \f$ S_t = (I - a_t b_t^\top) A_t S_{t-1} + k_t v_t^\top \f$
  fla,    ///< flash-linear-attention: \f$ S_t = A_t S_{t-1} + b_t (a_t^\top S_{t-1}) + k_t
          ///< v_t^\top \f$
  no_gate ///< seed 001, "DPLR without explicit gating": \f$ S_t = (A_t - a_t b_t^\top)
          ///< S_{t-1} + k_t v_t^\top \f$ (b is the note's d)
};

inline std::string name_of(Parameterisation p) {
  switch (p) {
  case Parameterisation::seed: return "seed";
  case Parameterisation::fla: return "fla";
  case Parameterisation::no_gate: return "no_gate";
  }
  return "?";
}

/// \brief Options of dplr, beside Options: which recurrence a, b are meant for.
struct Variant {
  Parameterisation param = Parameterisation::seed;
};

/// dplr takes a per-key gate, no beta, and the pair a, b.
inline const Signature signature{GateKind::key, false, 0.0, 1.0, 0, true};

template <Scalar S>
Output<S> recurrent(const Inputs<S> &in, const Options &opts, const Variant &var = {});
template <Scalar S>
Output<S> parallel(const Inputs<S> &in, const Options &opts, const Variant &var = {});
template <Scalar S>
Output<S> chunk(const Inputs<S> &in, const Options &opts, const Variant &var = {});
template <Scalar S>
Grads<S> chunk_backward(const Inputs<S> &in, const Cotangents<S> &ct, const Options &opts,
                        const Variant &var = {});

/// The largest cond_inf of the unit lower triangular systems of one head's chunks of size C
/// (the engine's F = I + A_ba, E its inverse; x in the engine's form, as_core's): what the property
/// checks' error bounds are amplified by.
template <Scalar S> double chunk_condition(const Head<S> &x, const S &scale, std::size_t C);

} // namespace ruleproof::dplr
