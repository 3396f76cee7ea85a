// ruleproof: dplr's three parameterisations as the chunkwise engine's one form,
// S_t = (A_t - a_t d_t^T) S_{t-1} + k_t v_t^T: `as_core` maps the inputs to it and `from_core`
// maps the engine's gradients back (dplr.hpp says how for each).
#pragma once

#include "../core/heads.hpp"
#include "../shared/chunk.hpp"
#include "rule.hpp"

namespace ruleproof::dplr {

/// \brief The head as the chunkwise engine sees it (x.b holds d).
template <Scalar S> Head<S> as_core(Head<S> x, Parameterisation p) {
  using std::exp;
  switch (p) {
  case Parameterisation::seed: // (I - a b^T) A = A - a (e^g . b)^T
    x.b = x.b.cwiseProduct(shared::exp_of(x.g));
    break;
  case Parameterisation::fla: { // A + b a^T = A - b (-a)^T
    Mat<S> a = x.a;
    x.a = x.b;
    x.b = -a;
    break;
  }
  case Parameterisation::no_gate: break;
  }
  return x;
}

/// \brief The engine's gradients back to the parameterisation's own inputs x.
template <Scalar S> HeadGrads<S> from_core(HeadGrads<S> d, const Head<S> &x, Parameterisation p) {
  switch (p) {
  case Parameterisation::seed: {
    const Mat<S> decay = shared::exp_of(x.g);
    const Mat<S> dd = d.db;
    d.db = decay.cwiseProduct(dd);                    // d = e^g . b
    d.dg += x.b.cwiseProduct(decay).cwiseProduct(dd); // d(e^g . b)/dg = d
    break;
  }
  case Parameterisation::fla: {
    Mat<S> da = d.da;
    d.da = -d.db;
    d.db = da;
    break;
  }
  case Parameterisation::no_gate: break;
  }
  return d;
}

} // namespace ruleproof::dplr
