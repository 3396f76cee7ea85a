// ruleproof: GLA, chunkwise form and its analytic backward, with the stages named as the
// kernels name them (chunk_local_cumsum, A, h). Seed 002's log-space scores inside a
// chunk, the state passed from chunk to chunk.
#pragma once

#include <vector>

#include "../core/heads.hpp"

namespace ruleproof::gla {

/// \brief `chunk_local_cumsum`: \f$ g^{cum}_t = \sum_{s=c_0}^{t} g_s \f$ restarting at
/// every chunk start \f$ c_0 \f$ (natural log, so every entry is <= 0).
template <Scalar S> Mat<S> chunk_local_cumsum(const Mat<S> &g, std::size_t C) {
  Mat<S> g_cum = g;
  for (Eigen::Index t = 1; t < g.rows(); ++t)
    if (t % static_cast<Eigen::Index>(C) != 0)
      g_cum.row(t) += g_cum.row(t - 1);
  return g_cum;
}

namespace detail {

/// \brief The decay inside one chunk, \f$ R_{ijc} = \exp(g^{cum}_{ic} - g^{cum}_{jc}) \f$
/// for i >= j, and the three bilinear maps built on it. When the chunk's decay span fits
/// the exponent range of S, R factors as exp(g_cum_i) exp(-g_cum_j) (matrix products);
/// otherwise each exponent is taken pairwise, as seed 002's log-space form.
template <Scalar S> class ChunkDecay {
public:
  explicit ChunkDecay(const Mat<S> &g_cum) : g_cum_(g_cum) {
    using std::exp;
    const Eigen::Index n = g_cum.rows();
    S span(0);
    if (n > 0)
      for (Eigen::Index c = 0; c < g_cum.cols(); ++c)
        if (-g_cum(n - 1, c) > span)
          span = -g_cum(n - 1, c);
    factored_ = span < scalar_traits<S>::max_exponent_e() / S(2);
    if (factored_) {
      up_ = g_cum.unaryExpr([](const S &x) { return S(exp(x)); });
      down_ = g_cum.unaryExpr([](const S &x) { return S(exp(-x)); });
    }
  }

  /// \f$ A_{ij} = \sum_c X_{ic} Y_{jc} R_{ijc} \f$ for i >= j, zero above the diagonal.
  Mat<S> scores(const Mat<S> &X, const Mat<S> &Y) const {
    if (factored_)
      return Mat<S>(Mat<S>(X.cwiseProduct(up_) * Y.cwiseProduct(down_).transpose())
                        .template triangularView<Eigen::Lower>());
    const Eigen::Index n = X.rows();
    Mat<S> A = Mat<S>::Zero(n, n);
    for (Eigen::Index i = 0; i < n; ++i)
      for (Eigen::Index j = 0; j <= i; ++j)
        for (Eigen::Index c = 0; c < X.cols(); ++c)
          A(i, j) += X(i, c) * Y(j, c) * ratio(i, j, c);
    return A;
  }

  /// \f$ \partial X_{ic} = \sum_{j \le i} dA_{ij} Y_{jc} R_{ijc} \f$
  Mat<S> grad_left(const Mat<S> &dA, const Mat<S> &Y) const {
    if (factored_)
      return up_.cwiseProduct(lower(dA) * Y.cwiseProduct(down_));
    Mat<S> dX = Mat<S>::Zero(dA.rows(), Y.cols());
    for (Eigen::Index i = 0; i < dA.rows(); ++i)
      for (Eigen::Index j = 0; j <= i; ++j)
        for (Eigen::Index c = 0; c < Y.cols(); ++c)
          dX(i, c) += dA(i, j) * Y(j, c) * ratio(i, j, c);
    return dX;
  }

  /// \f$ \partial Y_{jc} = \sum_{i \ge j} dA_{ij} X_{ic} R_{ijc} \f$
  Mat<S> grad_right(const Mat<S> &dA, const Mat<S> &X) const {
    if (factored_)
      return down_.cwiseProduct(lower(dA).transpose() * X.cwiseProduct(up_));
    Mat<S> dY = Mat<S>::Zero(dA.cols(), X.cols());
    for (Eigen::Index i = 0; i < dA.rows(); ++i)
      for (Eigen::Index j = 0; j <= i; ++j)
        for (Eigen::Index c = 0; c < X.cols(); ++c)
          dY(j, c) += dA(i, j) * X(i, c) * ratio(i, j, c);
    return dY;
  }

private:
  S ratio(Eigen::Index i, Eigen::Index j, Eigen::Index c) const {
    using std::exp;
    return exp(g_cum_(i, c) - g_cum_(j, c));
  }
  static Mat<S> lower(const Mat<S> &A) { return A.template triangularView<Eigen::Lower>(); }

  const Mat<S> &g_cum_;
  bool factored_ = false;
  Mat<S> up_, down_; // exp(g_cum), exp(-g_cum)
};

/// Rows [begin, end) of chunk c.
struct ChunkRange {
  Eigen::Index begin, size;
};
inline std::vector<ChunkRange> chunks_of(Eigen::Index L, std::size_t C) {
  std::vector<ChunkRange> chunks;
  for (Eigen::Index s = 0; s < L; s += static_cast<Eigen::Index>(C))
    chunks.push_back({s, std::min<Eigen::Index>(static_cast<Eigen::Index>(C), L - s)});
  return chunks;
}

template <Scalar S> Mat<S> exp_of(const Mat<S> &x) {
  using std::exp;
  return x.unaryExpr([](const S &e) { return S(exp(e)); });
}

/// \f$ \exp(g^{cum}_{last} - g^{cum}_j) \f$: the decay from step j to the chunk's end.
template <Scalar S> Mat<S> decay_to_end(const Mat<S> &g_cum) {
  Mat<S> d = g_cum;
  for (Eigen::Index j = 0; j < d.rows(); ++j)
    d.row(j) = g_cum.row(g_cum.rows() - 1) - g_cum.row(j);
  return exp_of(d);
}

} // namespace detail

/// \brief The stage intermediates of the chunkwise forward, one entry per chunk.
template <class S> struct ChunkStages {
  Mat<S> g_cum;          ///< L x K, chunk_local_cumsum of g
  std::vector<Mat<S>> h; ///< K x V state at each chunk start (h[0] = initial state)
  std::vector<Mat<S>> A; ///< n x n intra-chunk scores of scaled q and k, lower triangular
};

template <class S> struct ChunkForward {
  HeadOutput<S> out;
  ChunkStages<S> stages;
};

/// \brief One head, chunkwise: for each chunk with start state h,
/// \f$ O = (\tilde Q \odot e^{g^{cum}}) h + A V \f$ and
/// \f$ h' = \mathrm{Diag}(e^{g^{cum}_{last}}) h + (K \odot e^{g^{cum}_{last} - g^{cum}})^\top V
/// \f$.
template <Scalar S>
ChunkForward<S> chunk_forward_head(const Head<S> &x, const S &scale, std::size_t C) {
  const Eigen::Index L = x.q.rows();
  ChunkForward<S> r;
  r.stages.g_cum = chunk_local_cumsum(x.g, C);
  r.out.o = Mat<S>::Zero(L, x.v.cols());
  Mat<S> h = x.h0;
  for (const auto &[s, n] : detail::chunks_of(L, C)) {
    const Mat<S> q = scale * x.q.middleRows(s, n), k = x.k.middleRows(s, n);
    const Mat<S> v = x.v.middleRows(s, n), g_cum = r.stages.g_cum.middleRows(s, n);
    const detail::ChunkDecay<S> decay(g_cum);
    Mat<S> A = decay.scores(q, k);
    r.out.o.middleRows(s, n) = q.cwiseProduct(detail::exp_of(g_cum)) * h + A * v;
    r.stages.h.push_back(h);
    r.stages.A.push_back(std::move(A));
    const Vec<S> b_last = detail::exp_of(Mat<S>(g_cum.row(n - 1).transpose()));
    h = b_last.asDiagonal() * h + k.cwiseProduct(detail::decay_to_end(g_cum)).transpose() * v;
  }
  r.out.ht = h;
  return r;
}

template <Scalar S> HeadOutput<S> chunk_head(const Head<S> &x, const S &scale, std::size_t C) {
  return chunk_forward_head(x, scale, C).out;
}

/// \brief One head, chunkwise analytic backward of \f$ \langle dO, O\rangle + \langle dS_T,
/// S_T\rangle \f$. Chunks are walked backwards carrying dh, the gradient of the chunk's
/// start state: \f$ dh = \mathrm{Diag}(e^{g^{cum}_{last}}) dh' + (\tilde Q \odot
/// e^{g^{cum}})^\top dO \f$. The gate gradient uses the identity, exact for every form,
/// \f$ \partial L / \partial G_t = \tilde q_t \odot d\tilde q_t - k_t \odot dk_t
/// + [t = T]\,\mathrm{rowsum}(S_T \odot dS_T) \f$ on the global log-decay G, then
/// \f$ dg_t = \sum_{s \ge t} \partial L / \partial G_s \f$.
template <Scalar S>
HeadGrads<S> chunk_backward_head(const Head<S> &x, const HeadCotangent<S> &ct, const S &scale,
                                 std::size_t C) {
  const Eigen::Index L = x.q.rows(), K = x.q.cols();
  const ChunkForward<S> fwd = chunk_forward_head(x, scale, C);
  const auto chunks = detail::chunks_of(L, C);
  HeadGrads<S> d{Mat<S>::Zero(L, K),          Mat<S>::Zero(L, K), Mat<S>::Zero(L, x.v.cols()),
                 Mat<S>::Zero(L, x.g.cols()), Vec<S>(),           Mat<S>()};
  Mat<S> dh = ct.d_ht; // gradient of the state after the last chunk
  for (std::size_t c = chunks.size(); c-- > 0;) {
    const auto [s, n] = chunks[c];
    const Mat<S> q = scale * x.q.middleRows(s, n), k = x.k.middleRows(s, n);
    const Mat<S> v = x.v.middleRows(s, n), d_o = ct.d_o.middleRows(s, n);
    const Mat<S> g_cum = fwd.stages.g_cum.middleRows(s, n);
    const Mat<S> &h = fwd.stages.h[c], &A = fwd.stages.A[c];
    const detail::ChunkDecay<S> decay(g_cum);
    const Mat<S> b = detail::exp_of(g_cum), to_end = detail::decay_to_end(g_cum);
    const Mat<S> dA = Mat<S>(d_o * v.transpose()).template triangularView<Eigen::Lower>();

    d.dv.middleRows(s, n) = A.transpose() * d_o + k.cwiseProduct(to_end) * dh;
    d.dq.middleRows(s, n) = scale * (b.cwiseProduct(d_o * h.transpose()) + decay.grad_left(dA, k));
    d.dk.middleRows(s, n) = decay.grad_right(dA, q) + to_end.cwiseProduct(v * dh.transpose());
    const Vec<S> b_last = b.row(n - 1).transpose();
    dh = b_last.asDiagonal() * dh + q.cwiseProduct(b).transpose() * d_o;
  }
  if (x.g.cols() > 0) { // dL/dG, then the reverse cumulative sum
    Mat<S> dG = x.q.cwiseProduct(d.dq) - x.k.cwiseProduct(d.dk); // q~ . dq~ = q . dq
    if (L > 0)
      dG.row(L - 1) += fwd.out.ht.cwiseProduct(ct.d_ht).rowwise().sum().transpose();
    for (Eigen::Index t = L - 1; t-- > 0;)
      dG.row(t) += dG.row(t + 1);
    d.dg = dG;
  }
  d.dh0 = dh;
  return d;
}

} // namespace ruleproof::gla
