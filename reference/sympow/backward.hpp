// ruleproof: sympow, analytic backward of the attention form for the loss <dO, O>.
// With s_ij = Q'_i^T K'_j, w_ij = e^{G_i - G_j} s_ij^p and, normalised, A_ij = w_ij / sum_j w_ij:
//   dV_j    = sum_{i >= j} A_ij dO_i
//   delta_ij = dO_i . (V_j - Y_i)            (plain: dO_i . V_j, and A = w)
//   P_ij    = A_ij delta_ij                   (= w_ij dL/dw_ij)
//   ds_ij   = p e^{G_i - G_j} s_ij^{p-1} delta_ij / den_i
//   dQ'_i   = sum_j ds_ij K'_j,  dK'_j = sum_i ds_ij Q'_i
//   dq_i    = scale R(mu_i)^T dQ'_i,  dk_j = R(mu_j)^T dK'_j
//   dG_i    = sum_j P_ij - sum_{i'} P_{i'i},  dg_t = sum_{i >= t} dG_i
//   dmu_ic  = Q'_{i,2c} dQ'_{i,2c+1} - Q'_{i,2c+1} dQ'_{i,2c}  (+ the same for K')
//   dbeta_t = sum_{i >= t} theta . dmu_i
// The quotient 1 / den_i and the powers are taken in log space, as in the forward pass.
#pragma once

#include "attention.hpp"

namespace ruleproof::sympow {

/// \brief Gradients of \f$ \langle dO, O \rangle \f$ for one head in the attention form.
/// Returns dq, dk (L x d), dv (L x V), dg (L x 1), dbeta (L). No initial state.
template <Scalar S>
HeadGrads<S> attention_backward_head(const SympowHead<S> &x, const Mat<S> &d_o, const S &scale) {
  using std::abs;
  using std::exp;
  using std::log;
  const Eigen::Index L = x.q.rows(), d = x.q.cols(), V = x.v.cols();
  const int p = x.p;
  const Vec<S> G = log_gate_cumsum(x.g);
  const Mat<S> mu = cumulative_angles(x.beta, x.theta);
  const Mat<S> qr = rotate_rows(mu, x.q), kr = rotate_rows(mu, x.k);
  const Mat<S> o = attention_head(x, false).o;
  Mat<S> dqr = Mat<S>::Zero(L, d), dkr = Mat<S>::Zero(L, d), dv = Mat<S>::Zero(L, V);
  Vec<S> dG = Vec<S>::Zero(L);
  for (Eigen::Index i = 0; i < L; ++i) {
    Vec<S> s(i + 1);
    for (Eigen::Index j = 0; j <= i; ++j)
      s(j) = qr.row(i).dot(kr.row(j));
    // log den_i (normalised; 0 for the plain form): lse over x_ij = G_i - G_j + p log|s_ij|.
    S log_den(0);
    if (x.normalize) {
      bool any = false;
      S m(0);
      for (Eigen::Index j = 0; j <= i; ++j)
        if (!is_zero(s(j))) {
          const S xij = G(i) - G(j) + S(p) * log(abs(s(j)));
          if (!any || xij > m)
            m = xij;
          any = true;
        }
      S sum(0);
      for (Eigen::Index j = 0; j <= i; ++j)
        if (!is_zero(s(j)))
          sum += exp(G(i) - G(j) + S(p) * log(abs(s(j))) - m);
      log_den = m + log(sum);
    }
    const S do_o = x.normalize ? S(d_o.row(i).dot(o.row(i))) : S(0);
    for (Eigen::Index j = 0; j <= i; ++j) {
      const S delta = d_o.row(i).dot(x.v.row(j)) - do_o; // dO_i . (V_j - Y_i)
      S A(0), ds(0);
      if (x.normalize) {
        if (!is_zero(s(j))) {
          A = exp(G(i) - G(j) + S(p) * log(abs(s(j))) - log_den);
          // s^{p-1} / den = sign(s)^{p-1} e^{(p-1) log|s| - log den}
          const S mag = exp(G(i) - G(j) + S(p - 1) * log(abs(s(j))) - log_den);
          ds = S(p) * ((p - 1) % 2 == 1 && s(j) < S(0) ? S(-mag) : mag) * delta;
        } else if (p == 1) {
          ds = exp(G(i) - G(j) - log_den) * delta;
        }
      } else {
        const S decay = exp(G(i) - G(j));
        A = decay * power(s(j), p);
        ds = S(p) * decay * (p > 1 ? power(s(j), p - 1) : S(1)) * delta;
      }
      dv.row(j) += A * d_o.row(i);
      const S P = A * delta; // w_ij dL/dw_ij
      dG(i) += P;
      dG(j) -= P;
      dqr.row(i) += ds * kr.row(j);
      dkr.row(j) += ds * qr.row(i);
    }
  }
  HeadGrads<S> r;
  r.dv = dv;
  r.dq = scale * rotate_rows(Mat<S>(-mu), dqr); // R(mu)^T = R(-mu)
  r.dk = rotate_rows(Mat<S>(-mu), dkr);
  r.dg = Mat<S>(L, 1);
  S acc(0);
  for (Eigen::Index t = L - 1; t >= 0; --t) {
    acc += dG(t);
    r.dg(t, 0) = acc; // dg_t = sum_{i >= t} dG_i
  }
  r.dbeta = Vec<S>::Zero(L);
  if (x.rotating()) {
    S run(0);
    for (Eigen::Index t = L - 1; t >= 0; --t) {
      for (Eigen::Index c = 0; c < x.theta.size(); ++c) {
        const S dmu = qr(t, 2 * c) * dqr(t, 2 * c + 1) - qr(t, 2 * c + 1) * dqr(t, 2 * c) +
                      kr(t, 2 * c) * dkr(t, 2 * c + 1) - kr(t, 2 * c + 1) * dkr(t, 2 * c);
        run += x.theta(c) * dmu;
      }
      r.dbeta(t) = run; // dbeta_t = sum_{i >= t} theta . dmu_i
    }
  }
  return r;
}

} // namespace ruleproof::sympow
