// ruleproof: rotations for sympow. Seed 004, section 2.2: the block-diagonal rotary matrix
// R(theta) with theta_i = 2 pi / N^(2(i-1)/d); Proposition 3: for a d x d matrix P there is
// a D x D matrix Sym^p(P) (the seed's P-bar) with phi^p(P k) = Sym^p(P) phi^p(k).
#pragma once

#include <algorithm>
#include <array>
#include <numeric>

#include <boost/math/constants/constants.hpp>

#include "../core/dual.hpp"
#include "embedding.hpp"

namespace ruleproof::sympow {

namespace detail {
template <class S> struct pi_of {
  static S value() { return boost::math::constants::pi<S>(); }
};
template <class S> struct pi_of<Dual<S>> {
  static Dual<S> value() { return Dual<S>(pi_of<S>::value()); }
};
} // namespace detail

/// \f$ \pi \f$ to the precision of S.
template <class S> S pi() { return detail::pi_of<S>::value(); }

/// \brief The rotary rates \f$ \theta_i = 2\pi / N^{2(i-1)/d},\; i = 1, \dots, d/2 \f$
/// (seed 004, section 2.2), computed in S as \f$ 2\pi \exp(-\tfrac{2(i-1)}{d} \log N) \f$.
/// Note \f$ \theta_1 = 2\pi \f$: the first pair turns a full circle a step, so under fixed
/// rotary it never rotates. d must be even, N > 0. Returns d/2.
template <Scalar S> Vec<S> rotary_rates(std::size_t d, double N) {
  using std::exp;
  using std::log;
  if (d % 2 != 0)
    throw InputError("q",
                     "rotary embeddings pair the features: d = " + std::to_string(d) + " is odd");
  if (!(N > 0) || !std::isfinite(N))
    throw InputError("rotary_base", "N = " + std::to_string(N) + " must be positive and finite");
  const S two_pi = from_double<S>(2) * pi<S>();
  const S log_N = log(from_double<S>(N));
  Vec<S> theta(static_cast<Eigen::Index>(d / 2));
  for (std::size_t i = 0; i < d / 2; ++i)
    theta(static_cast<Eigen::Index>(i)) =
        two_pi * exp(-(from_double<S>(2.0 * static_cast<double>(i)) /
                       from_double<S>(static_cast<double>(d))) *
                     log_N);
  return theta;
}

/// \brief The block-diagonal rotation \f$ R(\theta) \f$: block c (rows and columns 2c, 2c+1)
/// is \f$ \begin{pmatrix} \cos\theta_c & -\sin\theta_c \\ \sin\theta_c & \cos\theta_c
/// \end{pmatrix} \f$ (seed 004, section 2.2). theta: d/2; returns d x d.
template <class S> Mat<S> rotary_matrix(const Vec<S> &theta) {
  using std::cos;
  using std::sin;
  const Eigen::Index h = theta.size();
  Mat<S> R = Mat<S>::Zero(2 * h, 2 * h);
  for (Eigen::Index c = 0; c < h; ++c) {
    const S co = cos(theta(c)), si = sin(theta(c));
    R(2 * c, 2 * c) = co;
    R(2 * c, 2 * c + 1) = -si;
    R(2 * c + 1, 2 * c) = si;
    R(2 * c + 1, 2 * c + 1) = co;
  }
  return R;
}

/// \brief \f$ R(\mu) x \f$ without building R: each pair (x_{2c}, x_{2c+1}) turns by
/// \f$ \mu_c \f$. mu: d/2; x: d; returns d.
template <class S> Vec<S> rotate(const Vec<S> &mu, const Vec<S> &x) {
  using std::cos;
  using std::sin;
  Vec<S> y(x.size());
  for (Eigen::Index c = 0; c < mu.size(); ++c) {
    const S co = cos(mu(c)), si = sin(mu(c));
    y(2 * c) = co * x(2 * c) - si * x(2 * c + 1);
    y(2 * c + 1) = si * x(2 * c) + co * x(2 * c + 1);
  }
  return y;
}

/// \brief \f$ R(\mu)^\top x = R(-\mu) x \f$ without building R. mu: d/2; x: d; returns d.
template <class S> Vec<S> rotate_back(const Vec<S> &mu, const Vec<S> &x) {
  using std::cos;
  using std::sin;
  Vec<S> y(x.size());
  for (Eigen::Index c = 0; c < mu.size(); ++c) {
    const S co = cos(mu(c)), si = sin(mu(c));
    y(2 * c) = co * x(2 * c) + si * x(2 * c + 1);
    y(2 * c + 1) = co * x(2 * c + 1) - si * x(2 * c);
  }
  return y;
}

/// \brief \f$ \phi^p(P k) \f$, the implicit action of \f$ \mathrm{Sym}^p(P) \f$ on an
/// embedded vector (seed 004, Proposition 3): nothing of size D x D is built.
/// P: d x d; k: d; returns D.
template <class S> Vec<S> phi_of_product(const Basis &b, const Mat<S> &P, const Vec<S> &k) {
  const Vec<S> Pk = P * k;
  return phi(b, sqrt_multinomials<S>(b), Pk);
}

/// \brief The permanent of the p x p matrix \f$ P_{a_i, b_j} \f$ (rows a, columns b with
/// repetition), summed over all p! permutations: no cancellation beyond the entries' own.
template <class S>
S permanent(const Mat<S> &P, const std::uint16_t *a, const std::uint16_t *b, int p) {
  std::array<int, 16> sigma{};
  std::iota(sigma.begin(), sigma.begin() + p, 0);
  S total(0);
  do {
    S prod(1);
    for (int i = 0; i < p; ++i)
      prod *= P(a[i], b[sigma[i]]);
    total += prod;
  } while (std::next_permutation(sigma.begin(), sigma.begin() + p));
  return total;
}

/// \brief The permanent grouped by repeated columns: \f$ \sum_\tau \prod_i P_{a_i, \tau_i} \f$
/// over the distinct arrangements \f$ \tau \f$ of the tuple b, which is
/// \f$ \mathrm{per}\, P[a, b] / \beta! \f$ (each arrangement occurs \f$ \beta! \f$ times among
/// the p! permutations): the coefficient of \f$ x^\beta \f$ in \f$ (P x)^\alpha \f$.
template <class S>
S arrangement_sum(const Mat<S> &P, const std::uint16_t *a, const std::uint16_t *b, int p) {
  std::array<std::uint16_t, 16> tau{};
  std::copy(b, b + p, tau.begin()); // sorted: next_permutation walks each arrangement once
  S total(0);
  do {
    S prod(1);
    for (int i = 0; i < p; ++i)
      prod *= P(a[i], tau[i]);
    total += prod;
  } while (std::next_permutation(tau.begin(), tau.begin() + p));
  return total;
}

/// \brief \f$ \mathrm{Sym}^p(P) \f$, the D x D matrix with \f$ \phi^p(P x) = \mathrm{Sym}^p(P)
/// \phi^p(x) \f$ for every x (the seed's \f$ \bar P \f$, Proposition 3, restricted to the
/// symmetric coordinates):
/// \f[ \mathrm{Sym}^p(P)_{\alpha\beta} = \frac{\mathrm{per}\, P[a, b]}{\sqrt{\alpha!\, \beta!}}
///   = \sqrt{\frac{c_\alpha}{c_\beta}} \sum_{\tau} \prod_i P_{a_i \tau_i}, \f]
/// a, b the sorted index tuples of multisets \f$ \alpha, \beta \f$, \f$ \alpha! = \prod_j
/// m_j! \f$, \f$ c_\alpha = p!/\alpha! \f$ the multinomial, \f$ \tau \f$ the distinct
/// arrangements of b (arrangement_sum). It is a functor: Sym(PQ) = Sym(P) Sym(Q),
/// Sym(P^T) = Sym(P)^T, so it is orthogonal when P is.
/// Explicit, for small d only: costs D d^p p operations; throws InputError past max_bytes.
/// P: d x d; returns D x D.
template <Scalar S>
Mat<S> sym_power(const Mat<S> &P, int p, std::size_t max_bytes = default_max_bytes) {
  if (P.rows() != P.cols())
    throw InputError("P", "must be square, got " + std::to_string(P.rows()) + " x " +
                              std::to_string(P.cols()));
  if (p > 16)
    throw InputError("p", "Sym^p(P) takes p <= 16, got " + std::to_string(p));
  const Basis b = basis(static_cast<std::size_t>(P.rows()), p, max_bytes);
  const long double D = static_cast<long double>(b.size());
  sympow::detail::require_memory(
      "P", "Sym^" + std::to_string(p) + "(P), D x D with D = " + std::to_string(b.size()), D * D,
      sizeof(S), max_bytes);
  const Vec<S> w = sqrt_multinomials<S>(b);
  const Eigen::Index n = static_cast<Eigen::Index>(b.size());
  Mat<S> M(n, n);
  for (Eigen::Index r = 0; r < n; ++r)
    for (Eigen::Index c = 0; c < n; ++c)
      M(r, c) = arrangement_sum(P, b.multiset(static_cast<std::size_t>(r)),
                                b.multiset(static_cast<std::size_t>(c)), p) *
                (w(r) / w(c));
  return M;
}

} // namespace ruleproof::sympow
