// ruleproof: how far two sympow computations in the same precision may differ, derived from
// the precision (gamma_n, Higham 3.1) times a magnitude computed on the same input.
//
// Magnitudes. Every output is a sum over j of e^{G_i - G_j} s_ij^p V_j (over a denominator),
// and every form computes s_ij^p either as a power of a dot product of rotated vectors or as
// phi^p(Q')^T phi^p(K') = sum_r phi_r(Q') phi_r(K'). Both are bounded, term by term, by
// shat_ij^p with shat_ij = qhat_i^T khat_j, where qhat is q with each rotated pair replaced by
// the pair's norm (|R(mu) x| <= that, whatever the angle; |x| when not rotating), since
// sum_r |phi_r(a) phi_r(b)| = (|a|^T |b|)^p. So, with what_ij = e^{G_i - G_j} shat_ij^p:
//   plain:       |fl(o_i) - o_i| <= gamma_n M_i,  M_i = sum_j what_ij |V_j| (+ e^{G_i} |H_0|^T
//   phi(qhat_i)) normalised:  o_i = num_i / den_i, both with absolute error <= gamma_n (their
//   magnitude), so fl(den_i) = den_i (1 + e), |e| <= gamma_n kappa_i, and
//                |fl(o_i) - o_i| <= gamma_n (sum_j Ahat_ij |V_j| + |o_i| kappa_i)
//                                   / (1 - gamma_n kappa_i),
//                Ahat_ij = what_ij / den_i,  kappa_i = sum_j Ahat_ij  (>= 1).
//                Where gamma_n kappa_i >= 1 the computed denominator may be 0 or of either
//                sign: no bound exists, and row i's bound is +infinity (undecided).
// Two computations each within that of the truth differ by at most twice it (factor 2).
//
// Depth n, the longest chain of rounded operations, per head:
//   2L + 2C        sums over time (a chunk's intra part and the state's inter part)
//   p (d + 2 n_rot) + 2p   the dot product s_ij (d terms) of rotated vectors, to the power p
//   D + 2          phi^p's weights and the inner product of two phi's (recurrent, chunked)
//   n_rot = 5 + (L+1) B theta_max   a rotated entry: 3 operations, sin and cos, and the angle
//                  mu_i = sum beta_t theta, whose absolute error (L+1) u B theta_max
//                  (B = max_i sum_{t<=i} |beta_t|) moves the entry by that much relative to qhat
//   (2L+2) Gmax + 2  e^{G_i - G_j}, G a sum of up to L log-gates, Gmax = sum |g| (as in GLA)
//   3 p Lambda + 2 Gmax + 3  the log-space weights e^{G_i - G_j + p log|s| - m_i}: the absolute
//                  error of the exponent, Lambda = max |log|s_ij||
//   10 spare.
// Gradients: the analytic backward and the dual-number derivative are sums of products of the
// same quantities; their magnitude M' is the backward pass run on magnitudes (Ahat kappa for A,
// |dO_i| (|V_j| + ohat_i) for delta, qhat, khat for the rotated vectors, pair sums for R^T,
// sums for every difference), and n' = 2 n + 2L + 2V + d + 20.
#pragma once

#include <limits>

#include "../core/compare.hpp"
#include "attention.hpp"

namespace ruleproof::sympow {

/// \brief Element-wise bounds and the depth n they were computed with.
template <class S> struct ForwardBound {
  Tensor<S> o;           ///< [B, T, H, V]
  Tensor<S> final_state; ///< [N, H, D, V'] when opts.output_final_state
  double n = 0;
};

template <class S> struct BackwardBound {
  Grads<S> grads;      ///< bound per gradient element (dq, dk, dv, dg, dbeta)
  S loss_magnitude{0}; ///< <|dO|, M_o>: the scale of the loss's own rounding
  double n = 0, n_forward = 0;
};

namespace detail {

/// Rows of x with each pair replaced by the pair's 2-norm (rotating) or |x| (not).
template <class S> Mat<S> pair_norms(const Mat<S> &x, bool rotating) {
  using std::abs;
  using std::sqrt;
  Mat<S> y = x.cwiseAbs();
  if (rotating)
    for (Eigen::Index i = 0; i < x.rows(); ++i)
      for (Eigen::Index c = 0; c + 1 < x.cols(); c += 2)
        y(i, c) = y(i, c + 1) = sqrt(x(i, c) * x(i, c) + x(i, c + 1) * x(i, c + 1));
  return y;
}

/// Rows of x with each pair replaced by the pair's sum (the magnitude of R^T applied).
template <class S> Mat<S> pair_sums(const Mat<S> &x, bool rotating) {
  Mat<S> y = x;
  if (rotating)
    for (Eigen::Index i = 0; i < x.rows(); ++i)
      for (Eigen::Index c = 0; c + 1 < x.cols(); c += 2)
        y(i, c) = y(i, c + 1) = x(i, c) + x(i, c + 1);
  return y;
}

/// n of one head (see the top of this file).
template <class S>
double head_depth(const SympowHead<S> &x, std::size_t C, const Mat<S> &s_all, double D) {
  using std::abs;
  using std::log;
  const double L = static_cast<double>(x.q.rows()), d = static_cast<double>(x.q.cols());
  const double p = x.p;
  double Gmax = 0, B = 0, run = 0, theta_max = 0, Lambda = 0;
  for (Eigen::Index t = 0; t < x.g.size(); ++t)
    Gmax += std::abs(to_double(x.g(t)));
  for (Eigen::Index t = 0; t < x.beta.size(); ++t)
    B = std::max(B, run += std::abs(to_double(x.beta(t))));
  for (Eigen::Index c = 0; c < x.theta.size(); ++c)
    theta_max = std::max(theta_max, std::abs(to_double(x.theta(c))));
  for (Eigen::Index i = 0; i < s_all.rows(); ++i)
    for (Eigen::Index j = 0; j <= i; ++j)
      if (!is_zero(s_all(i, j)))
        Lambda = std::max(Lambda, std::abs(to_double(S(log(abs(s_all(i, j)))))));
  const double n_rot = x.rotating() ? 5 + (L + 1) * B * theta_max : 0;
  return 2 * L + 2 * static_cast<double>(C) + p * (d + 2 * n_rot) + 2 * p + D + 2 +
         (2 * L + 2) * Gmax + 2 + 3 * p * Lambda + 2 * Gmax + 3 + 10;
}

/// The magnitudes of one head: M_o (L x V), the weights Ahat (L x L, scaled by kappa when
/// normalised) and what the backward magnitude needs.
template <class S> struct HeadMagnitude {
  Mat<S> o;    ///< L x V
  Mat<S> A;    ///< L x L: kappa_i Ahat_ij (normalised) or what_ij (plain)
  Mat<S> s;    ///< L x L: s_ij (lower triangle)
  Mat<S> shat; ///< L x L: qhat_i^T khat_j
  Mat<S> qhat, khat;
  Vec<S> log_den, kappa; ///< L (normalised)
  Mat<S> state;          ///< D x V' when asked
  double n = 0;
};

template <Scalar S>
HeadMagnitude<S> head_magnitude(const SympowHead<S> &x, std::size_t C, bool with_state) {
  using std::abs;
  using std::exp;
  using std::log;
  const Eigen::Index L = x.q.rows(), V = x.v.cols(), VS = V + (x.normalize ? 1 : 0);
  const int p = x.p;
  const Vec<S> G = log_gate_cumsum(x.g);
  const Mat<S> mu = cumulative_angles(x.beta, x.theta, x.mu0);
  const Mat<S> qr = rotate_rows(mu, x.q), kr = rotate_rows(mu, x.k);
  HeadMagnitude<S> m;
  m.qhat = pair_norms(x.q, x.rotating());
  m.khat = pair_norms(x.k, x.rotating());
  m.s = Mat<S>::Zero(L, L);
  m.shat = Mat<S>::Zero(L, L);
  for (Eigen::Index i = 0; i < L; ++i)
    for (Eigen::Index j = 0; j <= i; ++j) {
      m.s(i, j) = qr.row(i).dot(kr.row(j));
      m.shat(i, j) = m.qhat.row(i).dot(m.khat.row(j));
    }
  const Mat<S> o = attention_head(x, false).o;
  const Mat<S> vabs = x.v.cwiseAbs();
  Basis b; // phi is built only where the initial or final state needs it
  Vec<S> w;
  if (x.h0.size() || with_state) {
    b = basis(static_cast<std::size_t>(x.q.cols()), p);
    w = sqrt_multinomials<S>(b);
  }
  m.o = Mat<S>::Zero(L, V);
  m.A = Mat<S>::Zero(L, L);
  m.log_den = Vec<S>::Zero(L);
  m.kappa = Vec<S>::Ones(L);
  for (Eigen::Index i = 0; i < L; ++i) {
    Vec<S> y0, y0abs; // H_0^T phi(Q'_i) and |H_0|^T phi(qhat_i)
    if (x.h0.size()) {
      y0 = x.h0.transpose() * phi(b, w, Vec<S>(qr.row(i).transpose()));
      y0abs = x.h0.cwiseAbs().transpose() * phi(b, w, Vec<S>(m.qhat.row(i).transpose()));
    }
    if (x.normalize) {
      // den_i = sum_j e^{x_ij} (+ e^{G_i} y0_V), scaled by e^{-mx}
      S mx = x.h0.size() ? G(i) : S(0);
      bool any = x.h0.size() > 0;
      for (Eigen::Index j = 0; j <= i; ++j)
        if (!is_zero(m.s(i, j))) {
          const S xij = G(i) - G(j) + S(p) * log(abs(m.s(i, j)));
          if (!any || xij > mx)
            mx = xij;
          any = true;
        }
      S den(0);
      for (Eigen::Index j = 0; j <= i; ++j)
        if (!is_zero(m.s(i, j)))
          den += exp(G(i) - G(j) + S(p) * log(abs(m.s(i, j))) - mx);
      if (x.h0.size())
        den += exp(G(i) - mx) * y0(V);
      const S den_abs = abs(den);
      m.log_den(i) = mx + log(den_abs);
      S kappa(0);
      Vec<S> num = Vec<S>::Zero(V);
      for (Eigen::Index j = 0; j <= i; ++j) {
        if (is_zero(m.shat(i, j)))
          continue;
        const S a = exp(G(i) - G(j) + S(p) * log(m.shat(i, j)) - mx) / den_abs; // Ahat_ij
        m.A(i, j) = a;
        kappa += a;
        num += a * vabs.row(j).transpose();
      }
      if (x.h0.size()) {
        const S scale0 = exp(G(i) - mx) / den_abs;
        kappa += scale0 * y0abs(V);
        num += scale0 * y0abs.head(V);
      }
      m.kappa(i) = kappa;
      m.A.row(i) *= kappa;
      m.o.row(i) = (num + kappa * o.row(i).cwiseAbs().transpose()).transpose();
    } else {
      Vec<S> num = Vec<S>::Zero(V);
      for (Eigen::Index j = 0; j <= i; ++j) {
        m.A(i, j) = exp(G(i) - G(j)) * power(m.shat(i, j), p);
        num += m.A(i, j) * vabs.row(j).transpose();
      }
      if (x.h0.size())
        num += exp(G(i)) * y0abs;
      m.o.row(i) = num.transpose();
    }
  }
  if (with_state) {
    const Eigen::Index D = static_cast<Eigen::Index>(b.size());
    m.state = x.h0.size() ? Mat<S>(x.h0.cwiseAbs()) : Mat<S>(Mat<S>::Zero(D, VS));
    if (L > 0) {
      m.state *= exp(G(L - 1));
      for (Eigen::Index j = 0; j < L; ++j) {
        const Vec<S> phik = phi(b, w, Vec<S>(m.khat.row(j).transpose()));
        const S decay = exp(G(L - 1) - G(j));
        for (Eigen::Index r = 0; r < D; ++r) {
          for (Eigen::Index c = 0; c < V; ++c)
            m.state(r, c) += decay * phik(r) * vabs(j, c);
          if (x.normalize)
            m.state(r, V) += decay * phik(r);
        }
      }
    }
  }
  m.n = head_depth(x, C, m.s,
                   static_cast<double>(embedding_dim(static_cast<std::size_t>(x.q.cols()), p)));
  return m;
}

/// factor * gamma_n * |M| + n * (smallest normal), element by element.
template <Scalar S> S bound_of(const S &M, const S &factor_gamma, double n) {
  using std::abs;
  return factor_gamma * abs(M) + from_double<S>(n) * std::numeric_limits<S>::min();
}

/// gamma_n, refusing a bound that would be vacuous (n u >= 1/2).
template <Scalar S> S checked_gamma(double n) {
  const double nu = n * to_double(scalar_traits<S>::epsilon()) / 2;
  if (!(nu < 0.5))
    throw std::runtime_error("sympow bound: n u = " + std::to_string(nu) + " leaves no bound");
  return gamma_n<S>(n);
}

} // namespace detail

/// \brief Element-wise bounds on the difference of two sympow forms computed in S on this
/// input: factor * gamma_n * M (see the top of this file), with the largest n of any head.
template <Scalar S>
ForwardBound<S> forward_bound(const Inputs<S> &in, const SympowOptions &opts, double factor = 2) {
  using std::sqrt;
  validate(in, opts);
  const std::size_t B = in.q.dim(0), T = in.q.dim(1), H = in.q.dim(2), d = in.q.dim(3);
  const std::size_t V = in.v.dim(3);
  Options o;
  o.cu_seqlens = opts.cu_seqlens;
  const auto seqs = sequences_of(B, T, o);
  const S scale = opts.scale ? from_double<S>(*opts.scale)
                             : S(1) / sqrt(from_double<S>(static_cast<double>(d)));
  const Vec<S> theta = theta_of<S>(opts, d);
  std::vector<detail::HeadMagnitude<S>> mags(seqs.size() * H);
  ForwardBound<S> fb;
  for (std::size_t i = 0; i < mags.size(); ++i) {
    mags[i] = detail::head_magnitude(slice_head(in, seqs[i / H], i % H, opts, theta, scale),
                                     opts.chunk_size, opts.output_final_state);
    fb.n = std::max(fb.n, mags[i].n);
  }
  const S fg = from_double<S>(factor) * detail::checked_gamma<S>(fb.n);
  fb.o = Tensor<S>({B, T, H, V});
  if (opts.output_final_state)
    fb.final_state = Tensor<S>({seqs.size(), H, static_cast<std::size_t>(embedding_dim(d, opts.p)),
                                state_columns(V, opts)});
  const S gamma = detail::checked_gamma<S>(fb.n);
  for (std::size_t i = 0; i < mags.size(); ++i) {
    Mat<S> bo = mags[i].o;
    for (Eigen::Index r = 0; r < bo.rows(); ++r) {
      // the denominator's relative error, gamma_n kappa_r, divides the bound (normalised)
      const S slack = opts.normalize ? S(S(1) - gamma * mags[i].kappa(r)) : S(1);
      for (Eigen::Index c = 0; c < bo.cols(); ++c)
        bo(r, c) = slack > S(0) ? S(detail::bound_of(bo(r, c), fg, fb.n) / slack)
                                : scalar_traits<S>::infinity();
    }
    ruleproof::detail::put_rows(fb.o, bo, seqs[i / H], i % H);
    if (opts.output_final_state) {
      Mat<S> bs = mags[i].state;
      for (Eigen::Index e = 0; e < bs.size(); ++e)
        bs(e) = detail::bound_of(bs(e), fg, fb.n);
      ruleproof::detail::put_state(fb.final_state, bs, seqs[i / H].index, i % H);
    }
  }
  return fb;
}

namespace detail {

/// The backward pass of backward.hpp run on magnitudes (see the top of this file).
template <Scalar S>
HeadGrads<S> backward_magnitude_head(const SympowHead<S> &x, const HeadMagnitude<S> &m,
                                     const Mat<S> &d_o, const S &scale, S &loss_mag) {
  using std::abs;
  using std::exp;
  using std::log;
  const Eigen::Index L = x.q.rows(), d = x.q.cols(), V = x.v.cols();
  const int p = x.p;
  const Vec<S> G = log_gate_cumsum(x.g);
  const Mat<S> do_abs = d_o.cwiseAbs(), vabs = x.v.cwiseAbs();
  Mat<S> dq = Mat<S>::Zero(L, d), dk = Mat<S>::Zero(L, d), dv = Mat<S>::Zero(L, V);
  Vec<S> dG = Vec<S>::Zero(L);
  for (Eigen::Index i = 0; i < L; ++i) {
    loss_mag += do_abs.row(i).dot(m.o.row(i));
    const Vec<S> ohat = (m.A.row(i).head(i + 1) * vabs.topRows(i + 1)).transpose();
    for (Eigen::Index j = 0; j <= i; ++j) {
      const S delta = x.normalize ? S(do_abs.row(i).dot(vabs.row(j)) + do_abs.row(i).dot(ohat))
                                  : S(do_abs.row(i).dot(vabs.row(j)));
      S ds(0);
      const S sh = m.shat(i, j);
      if (!is_zero(sh) || p == 1) {
        const S spm1 = p > 1 ? power(sh, p - 1) : S(1);
        ds = x.normalize ? S(S(p) * m.kappa(i) * exp(G(i) - G(j) - m.log_den(i)) * spm1 * delta)
                         : S(S(p) * exp(G(i) - G(j)) * spm1 * delta);
      }
      dv.row(j) += m.A(i, j) * do_abs.row(i);
      const S P = m.A(i, j) * delta;
      dG(i) += P;
      dG(j) += P;
      dq.row(i) += ds * m.khat.row(j);
      dk.row(j) += ds * m.qhat.row(i);
    }
  }
  HeadGrads<S> r;
  r.dv = dv;
  r.dq = scale * pair_sums(dq, x.rotating());
  r.dk = pair_sums(dk, x.rotating());
  r.dg = Mat<S>(L, 1);
  S acc(0);
  for (Eigen::Index t = L - 1; t >= 0; --t)
    r.dg(t, 0) = acc += dG(t);
  r.dbeta = Vec<S>::Zero(L);
  if (x.rotating()) {
    S run(0);
    for (Eigen::Index t = L - 1; t >= 0; --t) {
      for (Eigen::Index c = 0; c < x.theta.size(); ++c) {
        const S dmu = m.qhat(t, 2 * c) * (dq(t, 2 * c) + dq(t, 2 * c + 1)) +
                      m.khat(t, 2 * c) * (dk(t, 2 * c) + dk(t, 2 * c + 1));
        run += abs(x.theta(c)) * dmu;
      }
      r.dbeta(t) = run;
    }
  }
  return r;
}

} // namespace detail

/// \brief Element-wise bounds on the difference of two computations of the attention form's
/// gradients (analytic, dual numbers) in S: factor * gamma_n' * M', and the loss magnitude
/// <|dO|, M_o> with the forward depth, for finite differences' rounding.
template <Scalar S>
BackwardBound<S> backward_bound(const Inputs<S> &in, const Cotangents<S> &ct,
                                const SympowOptions &opts, double factor = 2) {
  using std::sqrt;
  validate(in, opts);
  const std::size_t B = in.q.dim(0), T = in.q.dim(1), H = in.q.dim(2), d = in.q.dim(3);
  const std::size_t V = in.v.dim(3);
  Options o;
  o.cu_seqlens = opts.cu_seqlens;
  const auto seqs = sequences_of(B, T, o);
  const S scale = opts.scale ? from_double<S>(*opts.scale)
                             : S(1) / sqrt(from_double<S>(static_cast<double>(d)));
  const Vec<S> theta = theta_of<S>(opts, d);
  BackwardBound<S> bb;
  Grads<S> &M = bb.grads;
  M.dq = Tensor<S>(in.q.shape());
  M.dk = Tensor<S>(in.k.shape());
  M.dv = Tensor<S>(in.v.shape());
  if (!in.g.empty())
    M.dg = Tensor<S>(in.g.shape());
  if (!in.beta.empty())
    M.dbeta = Tensor<S>(in.beta.shape());
  for (std::size_t i = 0; i < seqs.size() * H; ++i) {
    const Sequence &seq = seqs[i / H];
    const std::size_t h = i % H;
    const SympowHead<S> x = slice_head(in, seq, h, opts, theta, scale);
    const detail::HeadMagnitude<S> m = detail::head_magnitude(x, opts.chunk_size, false);
    bb.n_forward = std::max(bb.n_forward, m.n);
    const HeadGrads<S> r = detail::backward_magnitude_head(
        x, m, ruleproof::detail::rows_of(ct.d_o, seq, h), scale, bb.loss_magnitude);
    ruleproof::detail::put_rows(M.dq, r.dq, seq, h);
    ruleproof::detail::put_rows(M.dk, r.dk, seq, h);
    ruleproof::detail::put_rows(M.dv, r.dv, seq, h);
    if (!in.g.empty())
      ruleproof::detail::put_rows(M.dg, r.dg, seq, h);
    if (!in.beta.empty())
      ruleproof::detail::put_rows(M.dbeta, Mat<S>(r.dbeta), seq, h);
  }
  bb.n = 2 * bb.n_forward + 2 * static_cast<double>(T) + 2 * static_cast<double>(V) +
         static_cast<double>(d) + 20;
  const S fg = from_double<S>(factor) * detail::checked_gamma<S>(bb.n);
  for (Tensor<S> *t : {&M.dq, &M.dk, &M.dv, &M.dg, &M.dbeta})
    for (std::size_t e = 0; e < t->size(); ++e)
      (*t)[e] = detail::bound_of((*t)[e], fg, bb.n);
  return bb;
}

} // namespace ruleproof::sympow
