// ruleproof: sympow, attention form (quadratic). Seed 004, conformal-sympow:
//   B_ij = b_ij (Q'_i^T K'_j)^p,  b_ij = prod_{t=j+1}^{i} gamma_t = exp(G_i - G_j),
//   Y_i = sum_{j <= i} B_ij V_j / sum_{j <= i} B_ij.
// Only the scores s_ij = Q'_i^T K'_j are formed, never phi^p: the form costs L^2 d, not D.
// Normalised, each row is stabilised in log space like a softmax:
//   x_ij = G_i - G_j + p log|s_ij|,  m_i = max_j x_ij,  Y_i = sum_j e^{x_ij - m_i} V_j / (same, 1).
// An initial state H_0 enters as e^{G_i} H_0^T phi^p(Q'_i) (then phi of the query is formed).
#pragma once

#include "head.hpp"

namespace ruleproof::sympow {

/// Whether |s| is exactly zero (compares values only, also for dual numbers).
template <class S> bool is_zero(const S &s) {
  using std::abs;
  return !(abs(s) > S(0));
}

/// \brief The state the attention form implies at the end of a head:
/// \f$ H_L = e^{G_L} H_0 + \sum_j e^{G_L - G_j} \phi^p(K'_j) [V_j, 1]^\top \f$.
/// kr: L x d rotated keys; G: L; returns D x V'.
template <class S>
Mat<S> implied_final_state(const SympowHead<S> &x, const Mat<S> &kr, const Vec<S> &G) {
  using std::exp;
  const Basis b = basis(static_cast<std::size_t>(x.k.cols()), x.p);
  const Vec<S> w = sqrt_multinomials<S>(b);
  const Eigen::Index L = x.k.rows(), V = x.v.cols(), D = static_cast<Eigen::Index>(b.size());
  const Eigen::Index VS = V + (x.normalize ? 1 : 0);
  Mat<S> ht = x.h0.size() ? x.h0 : Mat<S>(Mat<S>::Zero(D, VS));
  if (L == 0)
    return ht;
  ht *= exp(G(L - 1));
  for (Eigen::Index j = 0; j < L; ++j) {
    const Vec<S> phik = phi(b, w, Vec<S>(kr.row(j).transpose()));
    const S decay = exp(G(L - 1) - G(j));
    for (Eigen::Index r = 0; r < D; ++r) {
      for (Eigen::Index c = 0; c < V; ++c)
        ht(r, c) += decay * phik(r) * x.v(j, c);
      if (x.normalize)
        ht(r, V) += decay * phik(r);
    }
  }
  return ht;
}

/// \brief One head in the attention form. Normalised (p even):
/// \f$ Y_i = \sum_j e^{x_{ij} - m_i} [V_j, 1] \f$ then divide by the last entry, with
/// \f$ x_{ij} = G_i - G_j + p \log|Q_i'^\top K_j'| \f$; plain (any p):
/// \f$ Y_i = \sum_{j \le i} e^{G_i - G_j} (Q_i'^\top K_j')^p V_j \f$.
/// q, k: L x d; v: L x V; returns o: L x V and, when `final_state`, H_L: D x V'.
template <Scalar S> HeadOutput<S> attention_head(const SympowHead<S> &x, bool final_state) {
  using std::exp;
  using std::log;
  const Eigen::Index L = x.q.rows(), V = x.v.cols(), VS = V + (x.normalize ? 1 : 0);
  const Vec<S> G = log_gate_cumsum(x.g);
  const Mat<S> mu = cumulative_angles(x.beta, x.theta, x.mu0);
  const Mat<S> qr = rotate_rows(mu, x.q), kr = rotate_rows(mu, x.k); // Q'_i, K'_j
  Basis b;
  Vec<S> w;
  if (x.h0.size()) {
    b = basis(static_cast<std::size_t>(x.q.cols()), x.p);
    w = sqrt_multinomials<S>(b);
  }
  Mat<S> o(L, V);
  Vec<S> s(L);
  for (Eigen::Index i = 0; i < L; ++i) {
    Vec<S> y0; // H_0^T phi^p(Q'_i), the initial state's part
    if (x.h0.size())
      y0 = x.h0.transpose() * phi(b, w, Vec<S>(qr.row(i).transpose()));
    for (Eigen::Index j = 0; j <= i; ++j)
      s(j) = qr.row(i).dot(kr.row(j)); // s_ij = Q'_i^T K'_j
    Vec<S> y = Vec<S>::Zero(VS);
    if (x.normalize) {
      bool any = x.h0.size() > 0;
      S m = any ? G(i) : S(0); // m_i, the row's largest exponent
      for (Eigen::Index j = 0; j <= i; ++j)
        if (!is_zero(s(j))) {
          using std::abs;
          const S xij = G(i) - G(j) + S(x.p) * log(abs(s(j)));
          if (!any || xij > m)
            m = xij;
          any = true;
        }
      for (Eigen::Index j = 0; j <= i; ++j) {
        if (is_zero(s(j)))
          continue;
        using std::abs;
        const S a = exp(G(i) - G(j) + S(x.p) * log(abs(s(j))) - m); // B_ij e^{-m_i}
        y.head(V) += a * x.v.row(j).transpose();
        y(V) += a;
      }
      if (x.h0.size())
        y += exp(G(i) - m) * y0;
      o.row(i) = (y.head(V) / y(V)).transpose(); // Y_i = S_i phi(Q'_i) / Z_i phi(Q'_i)
    } else {
      for (Eigen::Index j = 0; j <= i; ++j)
        y += (exp(G(i) - G(j)) * power(s(j), x.p)) * x.v.row(j).transpose(); // b_ij s_ij^p V_j
      if (x.h0.size())
        y += exp(G(i)) * y0;
      o.row(i) = y.transpose();
    }
  }
  HeadOutput<S> r{o, Mat<S>()};
  if (final_state)
    r.ht = implied_final_state(x, kr, G);
  return r;
}

} // namespace ruleproof::sympow
