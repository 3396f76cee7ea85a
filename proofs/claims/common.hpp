// ruleproof: what the claims of every seed note share: the notes' file names, one head of
// drawn inputs in the reference's layout, and the small matrices the notes write with.
#pragma once

#include <string>
#include <vector>

#include "proofs/claim.hpp"
#include "reference/core/heads.hpp"

namespace ruleproof::proofs::notes {

inline const std::string seed_000 = "000_e483dc44522e9a80.txt";
inline const std::string seed_001 = "001_33bdf09da33bec83.txt";
inline const std::string seed_002 = "002_a013704b0210cf80.txt";
inline const std::string seed_003 = "003_550f12c2ed5852f3.txt";
inline const std::string seed_004 = "004_f5a7141b85890f4d.txt";

/// \brief One head of drawn inputs, L = T rows: q, k in [-1, 1]^{T x K}, v in
/// [-1, 1]^{T x V}, log-gates of `gate_cols` columns (0: none), beta in (0, 1] when asked,
/// the initial state zero (or drawn when `with_h0`), no low-rank pair.
template <class S>
Head<S> draw_head(Draw<S> &d, std::size_t gate_cols, bool with_beta = false, bool with_h0 = false) {
  const std::size_t T = d.sizes.T, K = d.sizes.K, V = d.sizes.V;
  Head<S> x;
  x.q = d.values(T, K);
  x.k = d.values(T, K);
  x.v = d.values(T, V);
  x.g = d.log_gates(T, gate_cols);
  if (with_beta)
    x.beta = d.positives(T, 1).col(0);
  x.h0 = with_h0 ? d.values(K, V) : Mat<S>::Zero(K, V);
  x.a = Mat<S>(T, 0);
  x.b = Mat<S>(T, 0);
  return x;
}

/// The first t rows of a head (its initial state kept).
template <class S> Head<S> first_rows(const Head<S> &x, Eigen::Index t) {
  Head<S> y = x;
  y.q = x.q.topRows(t), y.k = x.k.topRows(t), y.v = x.v.topRows(t), y.g = x.g.topRows(t);
  if (x.beta.size() > 0)
    y.beta = x.beta.head(t);
  y.a = x.a.topRows(t), y.b = x.b.topRows(t);
  return y;
}

/// The states S_1 ... S_T of a rule, each the final state `recurrent(prefix).ht` of a prefix
/// run by the reference's recurrent form.
template <class S, class Recurrent>
std::vector<Mat<S>> states_of(const Head<S> &x, Recurrent recurrent) {
  std::vector<Mat<S>> states;
  for (Eigen::Index t = 1; t <= x.q.rows(); ++t)
    states.push_back(recurrent(first_rows(x, t)).ht);
  return states;
}

/// The causal mask M (L x L): 1 where i >= j (`inclusive`) or i > j, else 0.
template <class S> Mat<S> causal_mask(Eigen::Index L, bool inclusive = true) {
  Mat<S> M = Mat<S>::Zero(L, L);
  for (Eigen::Index i = 0; i < L; ++i)
    for (Eigen::Index j = 0; j < (inclusive ? i + 1 : i); ++j)
      M(i, j) = S(1);
  return M;
}

/// Row t of the result is exp(g_1 + ... + g_t): the cumulative decay b_t = prod alpha_j.
template <class S> Mat<S> cumulative_decay(const Mat<S> &g) {
  using std::exp;
  Mat<S> b(g.rows(), g.cols());
  for (Eigen::Index c = 0; c < g.cols(); ++c) {
    S sum(0);
    for (Eigen::Index t = 0; t < g.rows(); ++t) {
      sum += g(t, c);
      b(t, c) = exp(sum);
    }
  }
  return b;
}

/// Element-wise exp, for the notes' alpha_t = exp(g_t).
template <class S> Mat<S> exp_of(const Mat<S> &g) {
  using std::exp;
  return g.unaryExpr([](const S &x) { return S(exp(x)); });
}

/// One matrix of a list of matrices stacked (states S_1 ... S_T, for instance).
template <class S>
Sides<S> sides_of(const std::vector<Mat<S>> &lhs, const std::vector<Mat<S>> &rhs) {
  return {stack(lhs), stack(rhs)};
}

} // namespace ruleproof::proofs::notes
