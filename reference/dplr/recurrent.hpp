// ruleproof: DPLR (diagonal plus low rank), recurrent forms: the definitions, plain loops in
// the [K, V] layout of DESIGN.md, one per parameterisation.
//
// Seed 001 writes the rule in the [V, K] layout, S_t = S_{t-1} Diag(alpha_t) (I - b_t a_t^T)
// + v_t k_t^T, o_t = S_t q_t. Transposed (S -> S^T, so that o_t = S_t^T q_t):
//   seed     S_t = (I - a_t b_t^T) A_t S_{t-1} + k_t v_t^T,           A_t = Diag(exp(g_t))
//   fla      S_t = A_t S_{t-1} + b_t (a_t^T S_{t-1}) + k_t v_t^T       (flash-linear-attention)
//   no_gate  S_t = (A_t - a_t b_t^T) S_{t-1} + k_t v_t^T               (seed 001, last section,
//            its d_t = alpha_t . b_t passed as b)
// The three are one family: (I - a b^T) A = A - a (A b)^T, so
//   seed (a, b) = no_gate (a, exp(g) . b) = fla (a_fla = -exp(g) . b, b_fla = a),
//   fla (a, b) = no_gate (b, -a) = seed (b, -exp(-g) . a).
#pragma once

#include "../core/heads.hpp"
#include "rule.hpp"

namespace ruleproof::dplr {

/// \brief One head, the definition: per step the decay \f$ X = A_t S_{t-1} \f$ (rows times
/// \f$ e^{g_t} \f$), the rank-one correction of the chosen parameterisation, the outer
/// product \f$ k_t v_t^\top \f$, then \f$ o_t = S_t^\top (\mathrm{scale}\, q_t) \f$.
template <Scalar S>
HeadOutput<S> recurrent_head(const Head<S> &x, const S &scale, Parameterisation p) {
  using std::exp;
  const Eigen::Index L = x.q.rows(), K = x.q.cols(), V = x.v.cols();
  const bool gated = x.g.cols() > 0;
  Mat<S> state = x.h0;
  Mat<S> o = Mat<S>::Zero(L, V);
  for (Eigen::Index t = 0; t < L; ++t) {
    Mat<S> decayed = state; // X = A_t S_{t-1}
    if (gated)
      for (Eigen::Index i = 0; i < K; ++i)
        for (Eigen::Index j = 0; j < V; ++j)
          decayed(i, j) *= exp(x.g(t, i));
    Mat<S> next = decayed;
    for (Eigen::Index j = 0; j < V; ++j) {
      S proj(0);
      for (Eigen::Index i = 0; i < K; ++i) {
        if (p == Parameterisation::seed)
          proj += x.b(t, i) * decayed(i, j); // (b_t^T A_t S_{t-1})_j
        else if (p == Parameterisation::fla)
          proj += x.a(t, i) * state(i, j); // (a_t^T S_{t-1})_j
        else
          proj += x.b(t, i) * state(i, j); // (b_t^T S_{t-1})_j
      }
      for (Eigen::Index i = 0; i < K; ++i) {
        if (p == Parameterisation::fla)
          next(i, j) += x.b(t, i) * proj; // + b_t (a_t^T S_{t-1})
        else
          next(i, j) -= x.a(t, i) * proj;    // - a_t (b_t^T ...)
        next(i, j) += x.k(t, i) * x.v(t, j); // + k_t v_t^T
      }
    }
    state = next;
    for (Eigen::Index j = 0; j < V; ++j) {
      S acc(0);
      for (Eigen::Index i = 0; i < K; ++i)
        acc += state(i, j) * (scale * x.q(t, i)); // o_t = S_t^T q~_t
      o(t, j) = acc;
    }
  }
  return {o, state};
}

} // namespace ruleproof::dplr
