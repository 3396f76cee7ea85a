// ruleproof: KDA, parallel (quadratic) form: the whole sequence as one block, every decay
// taken pairwise in log space, exp(G_ic - G_jc) with G the cumulative log-decay, and the
// pseudo-values found by one triangular solve (no explicit inverse, no chunks).
#pragma once

#include "../core/heads.hpp"
#include "../gla/parallel.hpp"

namespace ruleproof::kda {

/// \brief One head in the parallel form. With \f$ G_t = \sum_{s \le t} g_s \f$, the rule
/// is \f$ S_t = \mathrm{Diag}(e^{G_t}) S_0 + \sum_{j \le t} (k_j \odot e^{G_t - G_j})
/// \Delta_j^\top \f$ where the pseudo-values \f$ \Delta_t = \beta_t (v_t - S_{t-1}^\top
/// \mathrm{Diag}(e^{g_t}) k_t) \f$ solve the unit lower triangular system
/// \f$ \Delta_i + \beta_i \sum_{j < i} (k_i^\top \mathrm{Diag}(e^{G_i - G_j}) k_j) \Delta_j
/// = \beta_i (v_i - S_0^\top (k_i \odot e^{G_i})) \f$; then
/// \f$ o_i = S_0^\top (\tilde q_i \odot e^{G_i}) + \sum_{j \le i} (\tilde q_i^\top
/// \mathrm{Diag}(e^{G_i - G_j}) k_j) \Delta_j \f$.
template <Scalar S> HeadOutput<S> parallel_head(const Head<S> &x, const S &scale) {
  using std::exp;
  const Eigen::Index L = x.q.rows(), K = x.q.cols();
  const Mat<S> q = scale * x.q;
  const Mat<S> G = gla::log_cumulative_decay(x.g);
  Mat<S> T = Mat<S>::Identity(L, L); // I + Diag(beta) (K K^T . decay . strictly lower)
  Mat<S> P = Mat<S>::Zero(L, L);     // Q~ K^T . decay . lower
  for (Eigen::Index i = 0; i < L; ++i)
    for (Eigen::Index j = 0; j <= i; ++j) {
      S kk(0), qk(0);
      for (Eigen::Index c = 0; c < K; ++c) {
        const S decay = exp(G(i, c) - G(j, c));
        kk += x.k(i, c) * x.k(j, c) * decay;
        qk += q(i, c) * x.k(j, c) * decay;
      }
      if (j < i)
        T(i, j) = x.beta(i) * kk;
      P(i, j) = qk;
    }
  const Mat<S> decay_from_start = G.unaryExpr([](const S &e) { return S(exp(e)); }); // e^{G} <= 1
  const Mat<S> k_decayed = x.k.cwiseProduct(decay_from_start);
  const Mat<S> rhs = x.beta.asDiagonal() * (x.v - k_decayed * x.h0);
  const Mat<S> delta = T.template triangularView<Eigen::Lower>().solve(rhs);
  const Mat<S> o = q.cwiseProduct(decay_from_start) * x.h0 + P * delta;

  Mat<S> ht = x.h0;
  if (L > 0) {
    Mat<S> k_to_end(L, K); // K . e^{G_L - G}
    for (Eigen::Index j = 0; j < L; ++j)
      for (Eigen::Index c = 0; c < K; ++c)
        k_to_end(j, c) = x.k(j, c) * exp(G(L - 1, c) - G(j, c));
    const Vec<S> b_end = decay_from_start.row(L - 1).transpose();
    ht = b_end.asDiagonal() * x.h0 + k_to_end.transpose() * delta;
  }
  return {o, ht};
}

} // namespace ruleproof::kda
