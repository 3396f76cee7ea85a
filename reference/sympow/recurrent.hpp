// ruleproof: sympow, recurrent form (the definition). Seed 004, equation 2, in the [D, V+1]
// layout of head.hpp: H_i = gamma_i H_{i-1} + phi^p(K'_i) [V_i, 1]^T, y_i = H_i^T phi^p(Q'_i),
// Y_i = y_i[0:V] / y_i[V]. The state is D x (V+1): it is materialised, so its size is checked.
#pragma once

#include "head.hpp"

namespace ruleproof::sympow {

/// \brief \f$ H_i = \gamma_i H_{i-1} + \phi^p(K'_i) [V_i, 1]^\top,\;
/// Y_i = S_i \phi^p(Q'_i) / (Z_i \phi^p(Q'_i)) \f$, one head, plain loops.
/// q, k: L x d; v: L x V; h0: D x V' or empty; returns o: L x V, ht: D x V'.
template <Scalar S> HeadOutput<S> recurrent_head(const SympowHead<S> &x) {
  using std::exp;
  const Basis b = basis(static_cast<std::size_t>(x.q.cols()), x.p);
  const Vec<S> w = sqrt_multinomials<S>(b);
  const Eigen::Index L = x.q.rows(), V = x.v.cols(), D = static_cast<Eigen::Index>(b.size());
  const Eigen::Index VS = V + (x.normalize ? 1 : 0);
  const Mat<S> mu = cumulative_angles(x.beta, x.theta, x.mu0); // mu_i = mu_{i-1} + beta_i theta
  const Mat<S> qr = rotate_rows(mu, x.q), kr = rotate_rows(mu, x.k); // Q'_t, K'_t
  Mat<S> state = x.h0.size() ? x.h0 : Mat<S>(Mat<S>::Zero(D, VS));
  Mat<S> o(L, V);
  for (Eigen::Index t = 0; t < L; ++t) {
    const Vec<S> phik = phi(b, w, Vec<S>(kr.row(t).transpose())); // phi^p(K'_t)
    const Vec<S> phiq = phi(b, w, Vec<S>(qr.row(t).transpose())); // phi^p(Q'_t)
    const S gamma = exp(x.g(t));
    for (Eigen::Index r = 0; r < D; ++r) {
      for (Eigen::Index c = 0; c < V; ++c)
        state(r, c) = gamma * state(r, c) + phik(r) * x.v(t, c); // S_t
      if (x.normalize)
        state(r, V) = gamma * state(r, V) + phik(r); // Z_t
    }
    Vec<S> y = Vec<S>::Zero(VS);
    for (Eigen::Index r = 0; r < D; ++r)
      for (Eigen::Index c = 0; c < VS; ++c)
        y(c) += state(r, c) * phiq(r);
    for (Eigen::Index c = 0; c < V; ++c)
      o(t, c) = x.normalize ? S(y(c) / y(V)) : y(c);
  }
  return {o, state};
}

} // namespace ruleproof::sympow
