// ruleproof: KDA (the delta rule with a per-key gate), recurrent form (the definition), in
// the [K, V] layout of DESIGN.md. Gated DeltaNet is this form with the scalar gate repeated
// over the K keys, the delta rule with g = 0 (see variant.hpp).
#pragma once

#include "../core/heads.hpp"

namespace ruleproof::kda {

/// \brief \f$ S_t = (I - \beta_t k_t k_t^\top)\,\mathrm{Diag}(e^{g_t}) S_{t-1} + \beta_t k_t
/// v_t^\top,\; o_t = S_t^\top (\mathrm{scale}\, q_t) \f$, one head; g is L x K (natural log).
///
/// Plain loops, to be checked by eye: first the decay \f$ X = \mathrm{Diag}(e^{g_t})
/// S_{t-1} \f$, then \f$ S_t = X + \beta_t k_t (v_t - X^\top k_t)^\top \f$, which is the
/// rule multiplied out.
template <Scalar S> HeadOutput<S> recurrent_head(const Head<S> &x, const S &scale) {
  using std::exp;
  const Eigen::Index L = x.q.rows(), K = x.q.cols(), V = x.v.cols();
  Mat<S> state = x.h0;
  Mat<S> o = Mat<S>::Zero(L, V);
  for (Eigen::Index t = 0; t < L; ++t) {
    for (Eigen::Index i = 0; i < K; ++i) {
      const S alpha = exp(x.g(t, i)); // alpha_t = exp(g_t)
      for (Eigen::Index j = 0; j < V; ++j)
        state(i, j) *= alpha; // X = Diag(alpha_t) S_{t-1}
    }
    for (Eigen::Index j = 0; j < V; ++j) {
      S kx(0);
      for (Eigen::Index i = 0; i < K; ++i)
        kx += x.k(t, i) * state(i, j); // (X^T k_t)_j
      const S delta = x.beta(t) * (x.v(t, j) - kx);
      for (Eigen::Index i = 0; i < K; ++i)
        state(i, j) += x.k(t, i) * delta; // S_t = X + beta_t k_t (v_t - X^T k_t)^T
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

} // namespace ruleproof::kda
