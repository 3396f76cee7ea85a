// ruleproof: GLA, recurrent form (the definition). Seed 002, "Gated Linear Attention
// Layer / Recurrent form", with Diag(alpha_t) = Diag(exp(g_t)), in the [K, V] layout.
#pragma once

#include "../core/heads.hpp"

namespace ruleproof::gla {

/// \brief \f$ S_t = \mathrm{Diag}(e^{g_t}) S_{t-1} + k_t v_t^\top,\;
/// o_t = S_t^\top (\mathrm{scale}\, q_t) \f$, one head; g is L x K.
///
/// Plain loops, to be checked by eye; speed belongs to the other forms.
template <Scalar S> HeadOutput<S> recurrent_head(const Head<S> &x, const S &scale) {
  using std::exp;
  const Eigen::Index L = x.q.rows(), K = x.q.cols(), V = x.h0.cols();
  Mat<S> state = x.h0;
  Mat<S> o = Mat<S>::Zero(L, x.v.cols());
  for (Eigen::Index t = 0; t < L; ++t) {
    for (Eigen::Index i = 0; i < K; ++i) {
      const S alpha = exp(x.g(t, i)); // alpha_t = exp(g_t)
      for (Eigen::Index j = 0; j < V; ++j)
        state(i, j) = alpha * state(i, j) + x.k(t, i) * x.v(t, j); // S_t
    }
    for (Eigen::Index j = 0; j < x.v.cols(); ++j) {
      S acc(0);
      for (Eigen::Index i = 0; i < K; ++i)
        acc += state(i, j) * (scale * x.q(t, i)); // o_t = S_t^T q~_t
      o(t, j) = acc;
    }
  }
  return {o, state};
}

} // namespace ruleproof::gla
