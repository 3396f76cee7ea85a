// ruleproof: the chunk machinery every rule's chunkwise form shares: the chunks of a
// sequence, the local cumulative log-gate (chunk_local_cumsum) and its adjoint
// (chunk_local_cumsum_reverse), the decay inside a chunk and the bilinear maps built on it
// (ChunkDecay), the decay to a chunk's end, triangular masks, and the inverse of a chunk's unit
// lower triangular system (solve_tril).
#pragma once

#include <algorithm>
#include <vector>

#include "../core/emulation.hpp"
#include "../core/scalar.hpp"
#include "products.hpp"

namespace ruleproof::shared {

/// \brief `chunk_local_cumsum`: \f$ g^{cum}_t = \sum_{s=c_0}^{t} g_s \f$ restarting at
/// every chunk start \f$ c_0 \f$ (natural log, so every entry is <= 0).
template <Scalar S> Mat<S> chunk_local_cumsum(const Mat<S> &g, std::size_t C) {
  Mat<S> g_cum = g;
  for (Eigen::Index t = 1; t < g.rows(); ++t)
    if (t % static_cast<Eigen::Index>(C) != 0)
      g_cum.row(t) += g_cum.row(t - 1);
  return g_cum;
}

/// \brief The decay inside one chunk, \f$ R_{ijc} = \exp(g^{cum}_{ic} - g^{cum}_{jc}) \f$
/// for i >= j, and the three bilinear maps built on it.
///
/// Row i is factored, \f$ R_{ijc} = e^{g^{cum}_{ic}} e^{-g^{cum}_{jc}} \f$ (matrix products),
/// when \f$ \max_c -g^{cum}_{ic} \f$ is below half the exponent range of S; since g <= 0,
/// -g_cum grows down the chunk, so the factored rows are a prefix and every j <= i of a
/// factored row is factored too. Other rows take each exponent pairwise, as seed 002's
/// log-space form; an emulated kernel (core/emulation.hpp) reads each pairwise term as two
/// rounded factors, the plain one and the decayed one, as a kernel's product against a
/// reference row does. Deciding row by row keeps the forward causal to the last bit: row i's
/// arithmetic never depends on a later row's gates (the products keep their full size, so
/// no entry's summation order depends on where the prefix ends).
template <Scalar S> class ChunkDecay {
public:
  explicit ChunkDecay(const Mat<S> &g_cum) : g_cum_(g_cum) {
    using std::exp;
    const Eigen::Index n = g_cum.rows(), K = g_cum.cols();
    const S limit = scalar_traits<S>::max_exponent_e() / S(2);
    up_ = g_cum.unaryExpr([](const S &x) { return S(exp(x)); }); // <= 1: always safe
    down_ = Mat<S>::Zero(n, K);
    for (factored_ = 0; factored_ < n; ++factored_) {
      bool safe = true;
      for (Eigen::Index c = 0; c < K; ++c)
        safe = safe && -g_cum(factored_, c) < limit;
      if (!safe)
        break;
      for (Eigen::Index c = 0; c < K; ++c)
        down_(factored_, c) = exp(-g_cum(factored_, c));
    }
  }

  /// \f$ A_{ij} = \sum_c X_{ic} Y_{jc} R_{ijc} \f$ for i >= j, zero above the diagonal.
  Mat<S> scores(const Mat<S> &X, const Mat<S> &Y) const {
    Mat<S> A = product<S>(Mat<S>(X.cwiseProduct(up_)), false, Mat<S>(Y.cwiseProduct(down_)), true,
                          Structure::lower_result);
    for (Eigen::Index i = factored_; i < X.rows(); ++i)
      for (Eigen::Index j = 0; j <= i; ++j) {
        S acc(0);
        for (Eigen::Index c = 0; c < X.cols(); ++c)
          acc += term(X(i, c), Y(j, c), ratio(i, j, c));
        A(i, j) = acc;
      }
    return A;
  }

  /// \f$ \partial X_{ic} = \sum_{j \le i} dA_{ij} Y_{jc} R_{ijc} \f$
  Mat<S> grad_left(const Mat<S> &dA, const Mat<S> &Y) const {
    // lower(dA) (Y . down): only the terms j <= i
    Mat<S> dX = up_.cwiseProduct(
        product<S>(dA, false, Mat<S>(Y.cwiseProduct(down_)), false, Structure::left_lower));
    for (Eigen::Index i = factored_; i < dA.rows(); ++i)
      for (Eigen::Index c = 0; c < Y.cols(); ++c) {
        S acc(0);
        for (Eigen::Index j = 0; j <= i; ++j)
          acc += term(dA(i, j), Y(j, c), ratio(i, j, c));
        dX(i, c) = acc;
      }
    return dX;
  }

  /// \f$ \partial Y_{jc} = \sum_{i \ge j} dA_{ij} X_{ic} R_{ijc} \f$
  Mat<S> grad_right(const Mat<S> &dA, const Mat<S> &X) const {
    Mat<S> dA_factored = dA; // the rows i of factored pairs; the others go pairwise
    dA_factored.bottomRows(dA.rows() - factored_).setZero();
    // lower(dA)^T (X . up): only the terms i >= j
    Mat<S> dY = down_.cwiseProduct(
        product<S>(dA_factored, true, Mat<S>(X.cwiseProduct(up_)), false, Structure::left_upper));
    for (Eigen::Index i = factored_; i < dA.rows(); ++i)
      for (Eigen::Index j = 0; j <= i; ++j)
        for (Eigen::Index c = 0; c < X.cols(); ++c)
          dY(j, c) += term(dA(i, j), X(i, c), ratio(i, j, c));
    return dY;
  }

  /// Whether every row is factored; then down() holds exp(-g_cum) on every row.
  bool all_rows_factored() const { return factored_ == g_cum_.rows(); }
  /// exp(g_cum), every row.
  const Mat<S> &up() const { return up_; }
  /// exp(-g_cum) on the factored rows, 0 on the others.
  const Mat<S> &down() const { return down_; }

private:
  /// One pairwise term x y r; emulated, the factors x and y r rounded as a kernel reads them.
  static S term(const S &x, const S &y, const S &r) {
    if constexpr (emulation::emulates<S>)
      return emulation::operand_entry(x) * emulation::operand_entry(S(y * r));
    return x * y * r;
  }
  S ratio(Eigen::Index i, Eigen::Index j, Eigen::Index c) const {
    using std::exp;
    return exp(g_cum_(i, c) - g_cum_(j, c));
  }
  const Mat<S> &g_cum_;   // must outlive the object
  Eigen::Index factored_; // rows [0, factored_) are factored
  Mat<S> up_, down_;
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

/// \brief The suffix sum inside every chunk, \f$ d g_t = \sum_{s = t}^{c_1} d\Gamma_s \f$
/// (flash-linear-attention's `chunk_local_cumsum(..., reverse=True)`): the adjoint of
/// chunk_local_cumsum.
template <Scalar S> Mat<S> chunk_local_cumsum_reverse(const Mat<S> &dg_cum, std::size_t C) {
  Mat<S> dg = dg_cum;
  for (const auto &[s, n] : chunks_of(dg.rows(), C))
    for (Eigen::Index t = s + n - 1; t-- > s;)
      dg.row(t) += dg.row(t + 1);
  return dg;
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

/// decay_to_end of one chunk: \f$ e^{g^{cum}_{last}} e^{-g^{cum}_j} \f$ from the decay's exp
/// values when every row is factored (no exp calls), else \f$ e^{g^{cum}_{last} - g^{cum}_j} \f$.
template <Scalar S> Mat<S> chunk_decay_to_end(const ChunkDecay<S> &decay, const Mat<S> &g_cum) {
  if (!decay.all_rows_factored()) // e^{g_last} could be subnormal: take each pair's exp
    return decay_to_end(g_cum);
  const Eigen::Index n = g_cum.rows();
  Mat<S> d(n, g_cum.cols());
  for (Eigen::Index c = 0; c < g_cum.cols(); ++c)
    for (Eigen::Index j = 0; j < n; ++j)
      d(j, c) = decay.up()(n - 1, c) * decay.down()(j, c);
  return d;
}

template <Scalar S> Mat<S> strictly_lower(const Mat<S> &A) {
  return A.template triangularView<Eigen::StrictlyLower>();
}
template <Scalar S> Mat<S> lower(const Mat<S> &A) {
  return A.template triangularView<Eigen::Lower>();
}
/// cond_inf(I + A0) = ||I + A0||_inf ||(I + A0)^-1||_inf of a chunk's unit lower triangular
/// system, from A0 and A = (I + A0)^-1.
template <Scalar S> double condition_inf(const Mat<S> &A0, const Mat<S> &A) {
  const Mat<S> T = Mat<S>::Identity(A0.rows(), A0.cols()) + A0;
  if (T.rows() == 0)
    return 1;
  return to_double(S(T.cwiseAbs().rowwise().sum().maxCoeff())) *
         to_double(S(A.cwiseAbs().rowwise().sum().maxCoeff()));
}

/// Row n - 1 of a chunk's g_cum as a K-vector of decays e^{Gamma_last}.
template <Scalar S> Vec<S> decay_last(const Mat<S> &g_cum) {
  return exp_of(Mat<S>(g_cum.row(g_cum.rows() - 1).transpose()));
}

/// \brief `solve_tril`: \f$ A = (I + A_0)^{-1} \f$ per chunk, by forward substitution on
/// the unit lower triangular \f$ I + A_0 \f$; A is unit lower triangular.
template <Scalar S> std::vector<Mat<S>> solve_tril(const std::vector<Mat<S>> &A0) {
  std::vector<Mat<S>> A;
  for (const Mat<S> &a0 : A0) // seed 003, forward step 2; kernels store A in 16 bits
    A.push_back(emulation::stored<S>(unit_lower_inverse(a0)));
  return A;
}

} // namespace ruleproof::shared
