// ruleproof: GLA, parallel (quadratic) form, stabilised in log space as seed 002 derives:
// P_ij = sum_k Q_ik K_jk exp(log B_ik - log B_jk), i >= j; O = (P . M) V.
#pragma once

#include "../core/heads.hpp"

namespace ruleproof::gla {

/// \brief Cumulative log-decay \f$ \log B_t = \sum_{s \le t} g_s \f$ along the rows of g.
template <Scalar S> Mat<S> log_cumulative_decay(const Mat<S> &g) {
  Mat<S> log_b = g;
  for (Eigen::Index t = 1; t < g.rows(); ++t)
    log_b.row(t) += log_b.row(t - 1);
  return log_b;
}

/// \brief One head in the parallel form. The initial state enters as
/// \f$ o_i \mathrel{+}= S_0^\top (\tilde q_i \odot B_i) \f$ and the final state is
/// \f$ S_T = \mathrm{Diag}(B_T) S_0 + \sum_j (k_j \odot B_T / B_j) v_j^\top \f$;
/// every exponent is a difference of log-decays, never a ratio of products.
template <Scalar S> HeadOutput<S> parallel_head(const Head<S> &x, const S &scale) {
  using std::exp;
  const Eigen::Index L = x.q.rows(), K = x.q.cols();
  const Mat<S> q = scale * x.q;
  const Mat<S> log_b = log_cumulative_decay(x.g);
  Mat<S> P = Mat<S>::Zero(L, L); // P . M, M the causal mask
  for (Eigen::Index i = 0; i < L; ++i)
    for (Eigen::Index j = 0; j <= i; ++j) {
      S acc(0);
      for (Eigen::Index c = 0; c < K; ++c)
        acc += q(i, c) * x.k(j, c) * exp(log_b(i, c) - log_b(j, c)); // seed 002, P_ij
      P(i, j) = acc;
    }
  Mat<S> q_decayed(L, K); // Q . B, exponents <= 0
  for (Eigen::Index i = 0; i < L; ++i)
    for (Eigen::Index c = 0; c < K; ++c)
      q_decayed(i, c) = q(i, c) * exp(log_b(i, c));
  Mat<S> o = P * x.v + q_decayed * x.h0;

  Mat<S> ht = x.h0;
  if (L > 0) {
    Mat<S> k_to_end(L, K); // K . B_T / B
    for (Eigen::Index j = 0; j < L; ++j)
      for (Eigen::Index c = 0; c < K; ++c)
        k_to_end(j, c) = x.k(j, c) * exp(log_b(L - 1, c) - log_b(j, c));
    Vec<S> b_end(K);
    for (Eigen::Index c = 0; c < K; ++c)
      b_end(c) = exp(log_b(L - 1, c));
    ht = b_end.asDiagonal() * x.h0 + k_to_end.transpose() * x.v;
  }
  return {o, ht};
}

} // namespace ruleproof::gla
