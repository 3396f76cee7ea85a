// ruleproof: GLA, chunkwise form and its analytic backward, with the stages named as the
// kernels name them (chunk_local_cumsum, A, h). Seed 002's log-space scores inside a
// chunk, the state passed from chunk to chunk.
#pragma once

#include <deque>
#include <vector>

#include "../core/heads.hpp"
#include "products.hpp"

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

namespace detail {

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

/// The forward pass with what the backward needs again: each chunk's g_cum and decay
/// (its exp values computed once).
template <class S> struct ChunkPass {
  ChunkForward<S> fwd;
  std::deque<Mat<S>> g_cum;         ///< per chunk; stable addresses, the decays refer to them
  std::vector<ChunkDecay<S>> decay; ///< per chunk
};

/// Runs the chunks in order: scores A, the output (when asked), the state passed on.
template <Scalar S>
void chunk_forward_pass(const Head<S> &x, const S &scale, std::size_t C, bool with_output,
                        ChunkPass<S> &p) {
  const Eigen::Index L = x.q.rows();
  ChunkForward<S> &r = p.fwd;
  r.stages.g_cum = chunk_local_cumsum(x.g, C);
  r.out.o = Mat<S>::Zero(L, x.v.cols());
  Mat<S> h = x.h0;
  const auto chunks = chunks_of(L, C);
  p.decay.reserve(chunks.size());
  for (const auto &[s, n] : chunks) {
    const Mat<S> q = scale * x.q.middleRows(s, n), k = x.k.middleRows(s, n);
    const Mat<S> v = x.v.middleRows(s, n);
    const Mat<S> &g_cum = p.g_cum.emplace_back(r.stages.g_cum.middleRows(s, n));
    const ChunkDecay<S> &decay = p.decay.emplace_back(g_cum);
    Mat<S> A = decay.scores(q, k);
    const Mat<S> &b = decay.up(); // e^{g_cum}
    if (with_output)              // O = (Q~ . e^{g_cum}) h + A V, A lower triangular
      r.out.o.middleRows(s, n) = product<S>(Mat<S>(q.cwiseProduct(b)), false, h, false) +
                                 product<S>(A, false, v, false, Structure::left_lower);
    r.stages.h.push_back(emulation::stored<S>(h)); // kernels store h in 16 bits
    r.stages.A.push_back(std::move(A));
    const Vec<S> b_last = b.row(n - 1).transpose();
    h = b_last.asDiagonal() * h +
        product<S>(Mat<S>(k.cwiseProduct(chunk_decay_to_end(decay, g_cum))), true, v, false);
  }
  r.out.ht = h;
}

} // namespace detail

/// \brief One head, chunkwise: for each chunk with start state h,
/// \f$ O = (\tilde Q \odot e^{g^{cum}}) h + A V \f$ and
/// \f$ h' = \mathrm{Diag}(e^{g^{cum}_{last}}) h + (K \odot e^{g^{cum}_{last} - g^{cum}})^\top V
/// \f$.
template <Scalar S>
ChunkForward<S> chunk_forward_head(const Head<S> &x, const S &scale, std::size_t C) {
  detail::ChunkPass<S> p;
  detail::chunk_forward_pass(x, scale, C, true, p);
  return std::move(p.fwd);
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
/// \f$ dg_t = \sum_{s \ge t} \partial L / \partial G_s \f$; the terms of \f$ d\tilde q_t \f$ and
/// \f$ dk_t \f$ from the score \f$ A_{tt} \f$ (no decay) cancel in it exactly and are left out,
/// so that their rounding stays out of dg, as kernels do. The forward is run once, for the
/// states, the scores and the decays (not the output).
template <Scalar S>
HeadGrads<S> chunk_backward_head(const Head<S> &x, const HeadCotangent<S> &ct, const S &scale,
                                 std::size_t C) {
  using detail::product;
  using detail::Structure;
  const Eigen::Index L = x.q.rows(), K = x.q.cols();
  detail::ChunkPass<S> p;
  detail::chunk_forward_pass(x, scale, C, false, p);
  const ChunkForward<S> &fwd = p.fwd;
  const auto chunks = detail::chunks_of(L, C);
  HeadGrads<S> d{Mat<S>::Zero(L, K),          Mat<S>::Zero(L, K), Mat<S>::Zero(L, x.v.cols()),
                 Mat<S>::Zero(L, x.g.cols()), Vec<S>(),           Mat<S>()};
  Mat<S> dh = ct.d_ht;            // gradient of the state after the last chunk
  Mat<S> dG = Mat<S>::Zero(L, K); // dL/dG of the global log-decay G, from each chunk's terms
  for (std::size_t c = chunks.size(); c-- > 0;) {
    const auto [s, n] = chunks[c];
    const Mat<S> q = scale * x.q.middleRows(s, n), k = x.k.middleRows(s, n);
    const Mat<S> v = x.v.middleRows(s, n), d_o = ct.d_o.middleRows(s, n);
    const Mat<S> &g_cum = p.g_cum[c];
    const Mat<S> &h = fwd.stages.h[c], &A = fwd.stages.A[c];
    const detail::ChunkDecay<S> &decay = p.decay[c];
    const Mat<S> &b = decay.up(); // e^{g_cum}
    const Mat<S> to_end = detail::chunk_decay_to_end(decay, g_cum);
    // dA = dO V^T . M, its diagonal apart: the terms i = j of dq~ and dk, dA_ii k_i and
    // dA_ii q~_i (no decay), cancel in dL/dG exactly, and are left out of it
    const Mat<S> dA = product<S>(d_o, false, v, true, Structure::lower_result);
    const Vec<S> dA_diagonal = dA.diagonal();
    const Mat<S> dA_strict = dA.template triangularView<Eigen::StrictlyLower>();

    d.dv.middleRows(s, n) = product<S>(A, true, d_o, false, Structure::left_upper) +
                            product<S>(Mat<S>(k.cwiseProduct(to_end)), false, dh, false);
    const Mat<S> dq_tilde =
        b.cwiseProduct(product<S>(d_o, false, h, true)) + decay.grad_left(dA_strict, k);
    const Mat<S> dk =
        decay.grad_right(dA_strict, q) + to_end.cwiseProduct(product<S>(v, false, dh, true));
    dG.middleRows(s, n) = q.cwiseProduct(dq_tilde) - k.cwiseProduct(dk); // q~ . dq~ - k . dk
    d.dq.middleRows(s, n) = scale * (dq_tilde + dA_diagonal.asDiagonal() * k);
    d.dk.middleRows(s, n) = dk + dA_diagonal.asDiagonal() * q;
    const Vec<S> b_last = b.row(n - 1).transpose();
    dh = b_last.asDiagonal() * dh + product<S>(Mat<S>(q.cwiseProduct(b)), true, d_o, false);
  }
  if (x.g.cols() > 0) { // dL/dG, then the reverse cumulative sum
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
