// ruleproof: gated Oja rule (per-value gate), recurrent form (the definition), in the [K, V]
// layout of DESIGN.md:
//   S_t = S_{t-1} A_t (I - beta_t v_t v_t^T) + beta_t k_t v_t^T,  A_t = Diag(exp(g_t)) (V x V),
//   o_t = S_t^T (scale q_t).
// Seed 000 (section 1.3) writes it in the [V, K] layout, S_t = (I - beta_t v_t v_t^T)
// Diag(alpha_t) S_{t-1} + beta_t v_t k_t^T, o_t = S_t q_t: the transpose of this one.
#pragma once

#include "../core/heads.hpp"

namespace ruleproof::gated_oja {

/// \brief One head, plain loops: \f$ X = S_{t-1} A_t \f$ (columns times \f$ e^{g_t} \f$),
/// then \f$ S_t = X + \beta_t (k_t - X v_t) v_t^\top \f$, the rule multiplied out.
template <Scalar S> HeadOutput<S> recurrent_head(const Head<S> &x, const S &scale) {
  using std::exp;
  const Eigen::Index L = x.q.rows(), K = x.q.cols(), V = x.v.cols();
  Mat<S> state = x.h0;
  Mat<S> o = Mat<S>::Zero(L, V);
  for (Eigen::Index t = 0; t < L; ++t) {
    for (Eigen::Index j = 0; j < V; ++j) {
      const S alpha = exp(x.g(t, j)); // alpha_t = exp(g_t), per value
      for (Eigen::Index i = 0; i < K; ++i)
        state(i, j) *= alpha; // X = S_{t-1} A_t
    }
    for (Eigen::Index i = 0; i < K; ++i) {
      S xv(0);
      for (Eigen::Index j = 0; j < V; ++j)
        xv += state(i, j) * x.v(t, j); // (X v_t)_i
      const S delta = x.beta(t) * (x.k(t, i) - xv);
      for (Eigen::Index j = 0; j < V; ++j)
        state(i, j) += delta * x.v(t, j); // S_t = X + beta_t (k_t - X v_t) v_t^T
    }
    for (Eigen::Index j = 0; j < V; ++j) {
      S acc(0);
      for (Eigen::Index i = 0; i < K; ++i)
        acc += state(i, j) * (scale * x.q(t, i)); // o_t = S_t^T q~_t
      o(t, j) = acc;
    }
  }
  return {o, state};
}

} // namespace ruleproof::gated_oja
