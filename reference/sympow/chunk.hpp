// ruleproof: sympow, chunked form. Chunks [c0, c1) of C steps; with g_cum the log-gates summed
// from the chunk's start (chunk_local_cumsum) and H the state entering the chunk (h):
//   A_ij = e^{g_cum_i - g_cum_j} (Q'_i^T K'_j)^p,   c0 <= j <= i < c1   (intra-chunk, no phi)
//   y_i  = e^{g_cum_i} H^T phi^p(Q'_i) + sum_j A_ij [V_j, 1]             (inter + intra)
//   H   <- e^{g_cum_last} H + sum_j e^{g_cum_last - g_cum_j} phi^p(K'_j) [V_j, 1]^T
// then Y_i = y_i[0:V] / y_i[V] when normalised. Follows the proofs of seed 004, Props. 1-2,
// cut at chunk boundaries; the state is materialised, so its size is checked.
#pragma once

#include "head.hpp"

namespace ruleproof::sympow {

/// \brief What the chunked form computes on its way, under the names the kernels use.
template <class S> struct ChunkStages {
  std::vector<Mat<S>> h; ///< state entering each chunk, D x V'
  std::vector<Mat<S>> A; ///< intra-chunk scores A_ij (lower triangle), C' x C'
  Vec<S> g_cum;          ///< log-gates summed from each chunk's start, L
};

/// \brief \f$ g^{cum}_i = \sum_{c_0 \le t \le i} g_t \f$, restarting at every chunk start.
template <class S> Vec<S> chunk_local_cumsum(const Vec<S> &g, std::size_t C) {
  Vec<S> out = g;
  for (Eigen::Index t = 1; t < g.size(); ++t)
    if (static_cast<std::size_t>(t) % C != 0)
      out(t) += out(t - 1);
  return out;
}

/// \brief One head in the chunked form with chunk size C >= 1 (L need not be a multiple);
/// fills `stages` when given. q, k: L x d; v: L x V; returns o: L x V, ht: D x V'.
template <Scalar S>
HeadOutput<S> chunk_head(const SympowHead<S> &x, std::size_t C, ChunkStages<S> *stages = nullptr) {
  using std::exp;
  const Basis b = basis(static_cast<std::size_t>(x.q.cols()), x.p);
  const Vec<S> w = sqrt_multinomials<S>(b);
  const Eigen::Index L = x.q.rows(), V = x.v.cols(), D = static_cast<Eigen::Index>(b.size());
  const Eigen::Index VS = V + (x.normalize ? 1 : 0);
  const Mat<S> mu = cumulative_angles(x.beta, x.theta, x.mu0);
  const Mat<S> qr = rotate_rows(mu, x.q), kr = rotate_rows(mu, x.k); // Q'_i, K'_j
  const Vec<S> g_cum = chunk_local_cumsum(x.g, C);
  Mat<S> vaug(L, VS); // [V_j, 1]
  vaug.leftCols(V) = x.v;
  if (x.normalize)
    vaug.col(V).setOnes();
  Mat<S> state = x.h0.size() ? x.h0 : Mat<S>(Mat<S>::Zero(D, VS));
  Mat<S> o(L, V);
  if (stages)
    stages->g_cum = g_cum;
  for (Eigen::Index c0 = 0; c0 < L; c0 += static_cast<Eigen::Index>(C)) {
    const Eigen::Index n = std::min<Eigen::Index>(static_cast<Eigen::Index>(C), L - c0);
    Mat<S> A = Mat<S>::Zero(n, n);
    for (Eigen::Index i = 0; i < n; ++i)
      for (Eigen::Index j = 0; j <= i; ++j)
        A(i, j) =
            exp(g_cum(c0 + i) - g_cum(c0 + j)) * power(S(qr.row(c0 + i).dot(kr.row(c0 + j))), x.p);
    if (stages) {
      stages->h.push_back(state);
      stages->A.push_back(A);
    }
    for (Eigen::Index i = 0; i < n; ++i) {
      const Vec<S> phiq = phi(b, w, Vec<S>(qr.row(c0 + i).transpose()));
      Vec<S> y = exp(g_cum(c0 + i)) * (state.transpose() * phiq); // inter-chunk
      y += (A.row(i) * vaug.middleRows(c0, n)).transpose();       // intra-chunk
      for (Eigen::Index c = 0; c < V; ++c)
        o(c0 + i, c) = x.normalize ? S(y(c) / y(V)) : y(c);
    }
    const S last = g_cum(c0 + n - 1);
    state *= exp(last);
    for (Eigen::Index j = 0; j < n; ++j) {
      const Vec<S> phik = phi(b, w, Vec<S>(kr.row(c0 + j).transpose()));
      const S decay = exp(last - g_cum(c0 + j));
      for (Eigen::Index r = 0; r < D; ++r)
        for (Eigen::Index c = 0; c < VS; ++c)
          state(r, c) += decay * phik(r) * vaug(c0 + j, c);
    }
  }
  return {o, state};
}

} // namespace ruleproof::sympow
