// ruleproof: what the claims of seed 004 (conformal-sympow) share: a drawn sympow head, the
// note's symbols written out (its recurrences, its attention form, b_ij, c_ij, mu_i), the
// reference's states in the note's layout, and the small linear algebra the proofs use.
//
// Layout: the note's S_i is V x D and Z_i is 1 x D (it right-multiplies states); the
// reference keeps H_i = [S_i^T | Z_i^T], D x (V+1). Rows r = 0..T-1 are the note's steps
// i = r + 1. A head that rotates draws K angle pairs, so its features are d = 2K.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include <Eigen/LU>

#include "common.hpp"
#include "reference/sympow/recurrent.hpp"

namespace ruleproof::proofs::notes::note004 {

using sympow::SympowHead;

/// d/2 drawn angles theta_c (exact: rational cos and sin).
template <class S> Vec<S> draw_angles(Draw<S> &d) {
  Vec<S> theta(static_cast<Eigen::Index>(d.sizes.K));
  for (Eigen::Index c = 0; c < theta.size(); ++c)
    theta(c) = d.angle();
  return theta;
}

/// What a drawn head carries besides Q, K, V.
struct Variant {
  bool rotary = false;        ///< fixed rates theta, K pairs of features (d = 2K)
  bool gated = false;         ///< gamma_i = exp(g_i) for drawn log-gates g_i
  bool learned_rates = false; ///< beta_i in (0, 2] (else beta_i = 1)
};

/// One sympow head: Q, K in [-1, 1]^{T x d}, V in [-1, 1]^{T x V}, normalised, power p.
template <class S> SympowHead<S> draw_sympow(Draw<S> &d, const Variant &v, int p = 2) {
  const std::size_t T = d.sizes.T, dim = v.rotary ? 2 * d.sizes.K : d.sizes.K;
  SympowHead<S> x;
  x.q = d.values(T, dim);
  x.k = d.values(T, dim);
  x.v = d.values(T, d.sizes.V);
  x.g = v.gated ? Vec<S>(d.log_gates(T, 1).col(0)) : Vec<S>(Vec<S>::Zero(x.q.rows()));
  x.theta = v.rotary ? draw_angles(d) : Vec<S>();
  x.beta =
      v.learned_rates ? Vec<S>(S(2) * d.positives(T, 1).col(0)) : Vec<S>(Vec<S>::Ones(x.q.rows()));
  x.p = p;
  return x;
}

/// Row r of m as a column (the note's Q_i, K_i, V_i, i = r + 1).
template <class S> Vec<S> row(const Mat<S> &m, Eigen::Index r) { return m.row(r).transpose(); }

/// The matrix whose row r is f(r)^T.
template <class S, class F> Mat<S> by_rows(Eigen::Index rows, F f) {
  Mat<S> m;
  for (Eigen::Index r = 0; r < rows; ++r) {
    const Vec<S> v = f(r);
    if (r == 0)
      m.resize(rows, v.size());
    m.row(r) = v.transpose();
  }
  return m;
}

/// The T x T matrix with f(i, j) where j <= i and 0 above.
template <class S, class F> Mat<S> lower(Eigen::Index T, F f) {
  Mat<S> m = Mat<S>::Zero(T, T);
  for (Eigen::Index i = 0; i < T; ++i)
    for (Eigen::Index j = 0; j <= i; ++j)
      m(i, j) = f(i, j);
  return m;
}

/// (u^T w)^p, the sympow kernel.
template <class S> S kernel(const Vec<S> &u, const Vec<S> &w, int p) {
  return sympow::power(S(u.dot(w)), p);
}

/// phi^p(v), the reference's symmetric power embedding.
template <class S> Vec<S> phi(const SympowHead<S> &x, const Vec<S> &v) {
  return sympow::phi(v, x.p);
}

/// The embedding dimension D of a head.
template <class S> Eigen::Index dim_D(const SympowHead<S> &x) {
  return static_cast<Eigen::Index>(sympow::basis(static_cast<std::size_t>(x.k.cols()), x.p).size());
}

/// M^n, n >= 0.
template <class S> Mat<S> matrix_power(const Mat<S> &M, Eigen::Index n) {
  Mat<S> out = Mat<S>::Identity(M.rows(), M.cols());
  for (Eigen::Index i = 0; i < n; ++i)
    out = (out * M).eval();
  return out;
}

/// Row r is R^{r+1} x_r: section 2.2's Q'_i = R^i Q_i, K'_j = R^j K_j with R = R(theta).
template <class S> Mat<S> turned_by_powers(const Vec<S> &theta, const Mat<S> &x) {
  const Mat<S> R = sympow::rotary_matrix(theta);
  return by_rows<S>(x.rows(),
                    [&](Eigen::Index r) { return Vec<S>(matrix_power(R, r + 1) * row(x, r)); });
}

/// mu_i = mu_{i-1} + beta_i theta from mu_0 (sections 2.2 and 3.2): row r is mu_{r+1}.
template <class S> Mat<S> note_angles(const SympowHead<S> &x, const Vec<S> &mu0) {
  Mat<S> mu(x.q.rows(), x.theta.size());
  if (mu.cols() == 0) // no rotation: a row of an empty matrix would offset a null pointer
    return mu;
  Vec<S> m = mu0;
  for (Eigen::Index r = 0; r < mu.rows(); ++r) {
    m = (m + x.beta(r) * x.theta).eval();
    mu.row(r) = m.transpose();
  }
  return mu;
}

/// mu_i from mu_0 = 0 (no columns when the head does not rotate).
template <class S> Mat<S> note_angles(const SympowHead<S> &x) {
  return note_angles(x, Vec<S>(Vec<S>::Zero(x.theta.size())));
}

/// R(mu_i), the rotation at row r of the angles.
template <class S> Mat<S> R_at(const Mat<S> &mu, Eigen::Index r) {
  return sympow::rotary_matrix(Vec<S>(mu.row(r).transpose()));
}

/// R(mu_i) x_i (no rotation when mu has no columns).
template <class S> Vec<S> turned(const Mat<S> &mu, const Mat<S> &x, Eigen::Index r) {
  return mu.cols() == 0 ? row(x, r) : Vec<S>(R_at(mu, r) * row(x, r));
}

/// gamma_i = exp(g_i).
template <class S> S gamma_at(const SympowHead<S> &x, Eigen::Index r) {
  using std::exp;
  return S(exp(x.g(r)));
}

/// b_ij = prod_{k=j+1}^{i} gamma_k (section 3.1, gamma_m read as gamma_k).
template <class S> S b(const SympowHead<S> &x, Eigen::Index i, Eigen::Index j) {
  S prod(1);
  for (Eigen::Index k = j + 1; k <= i; ++k)
    prod *= gamma_at(x, k);
  return prod;
}

/// c_ij = sum_{k=j+1}^{i} beta_k (section 3.2, the summand read as beta_k).
template <class S> S c(const SympowHead<S> &x, Eigen::Index i, Eigen::Index j) {
  S sum(0);
  for (Eigen::Index k = j + 1; k <= i; ++k)
    sum += x.beta(k);
  return sum;
}

/// Y_i = sum_{j<=i} A_ij V_j, A_ij = B_ij / sum_{k<=i} B_ik: the note's attention form with
/// pre-attention scores B(i, j).
template <class S, class Score> Mat<S> attention(const Mat<S> &V, Score B) {
  Mat<S> Y = Mat<S>::Zero(V.rows(), V.cols());
  for (Eigen::Index i = 0; i < V.rows(); ++i) {
    S total(0);
    for (Eigen::Index j = 0; j <= i; ++j) {
      const S score = B(i, j);
      Y.row(i) += score * V.row(j);
      total += score;
    }
    Y.row(i) /= total;
  }
  return Y;
}

/// States S_i (V x D), normalisers Z_i (1 x D) for i = 1..T, and outputs Y (T x V).
template <class S> struct Trace {
  std::vector<Mat<S>> state, normaliser;
  Mat<S> Y;
};

/// The reference's recurrence (the definition) in the note's layout: S_i = H_i[:, :V]^T and
/// Z_i = H_i[:, V]^T from the run on the first i steps.
template <class S> Trace<S> reference(const SympowHead<S> &x) {
  Trace<S> tr;
  const Eigen::Index V = x.v.cols();
  for (Eigen::Index t = 1; t <= x.q.rows(); ++t) {
    SympowHead<S> prefix = x;
    prefix.q = x.q.topRows(t), prefix.k = x.k.topRows(t), prefix.v = x.v.topRows(t);
    prefix.g = x.g.head(t), prefix.beta = x.beta.head(t);
    const Mat<S> H = sympow::recurrent_head(prefix).ht;
    tr.state.push_back(H.leftCols(V).transpose());
    tr.normaliser.push_back(H.col(V).transpose());
  }
  tr.Y = sympow::recurrent_head(x).o;
  return tr;
}

/// The note's recurrence: Z_i = gamma_i Z_{i-1} + phi^p(K'_i)^T, S_i = gamma_i S_{i-1} +
/// V_i phi^p(K'_i)^T from S_0 = 0, Z_0 = 0, and Y_i = S_i phi^p(Q'_i) / (Z_i phi^p(Q'_i)),
/// with K'_i = R(mu_i) K_i, Q'_i = R(mu_i) Q_i.
template <class S> Trace<S> note_recurrence(const SympowHead<S> &x, const Mat<S> &mu) {
  const Eigen::Index D = dim_D(x);
  Mat<S> state = Mat<S>::Zero(x.v.cols(), D), Z = Mat<S>::Zero(1, D);
  Trace<S> tr;
  tr.Y.resize(x.q.rows(), x.v.cols());
  for (Eigen::Index r = 0; r < x.q.rows(); ++r) {
    const Vec<S> phik = phi(x, turned(mu, x.k, r)), phiq = phi(x, turned(mu, x.q, r));
    Z = (gamma_at(x, r) * Z + phik.transpose()).eval();
    state = (gamma_at(x, r) * state + row(x.v, r) * phik.transpose()).eval();
    tr.state.push_back(state), tr.normaliser.push_back(Z);
    tr.Y.row(r) = (state * phiq).transpose() / S((Z * phiq)(0, 0));
  }
  return tr;
}

/// Both sides made of parts of different shapes, each part flattened into one column; where
/// two parts differ in shape, the sides are those parts (the engine reports their shapes).
template <class S> Sides<S> parts(const std::vector<Mat<S>> &lhs, const std::vector<Mat<S>> &rhs) {
  if (lhs.size() != rhs.size())
    throw std::logic_error("parts: the sides have different numbers of parts");
  std::vector<Mat<S>> l, r;
  for (std::size_t n = 0; n < lhs.size(); ++n) {
    if (lhs[n].rows() != rhs[n].rows() || lhs[n].cols() != rhs[n].cols())
      return {lhs[n], rhs[n]};
    l.push_back(lhs[n].reshaped(lhs[n].size(), 1));
    r.push_back(rhs[n].reshaped(rhs[n].size(), 1));
  }
  return sides_of(l, r);
}

/// Every state, normaliser and the outputs of two traces, part by part.
template <class S> Sides<S> traces(const Trace<S> &a, const Trace<S> &b) {
  std::vector<Mat<S>> l = a.state, r = b.state;
  l.insert(l.end(), a.normaliser.begin(), a.normaliser.end());
  r.insert(r.end(), b.normaliser.begin(), b.normaliser.end());
  l.push_back(a.Y), r.push_back(b.Y);
  return parts(l, r);
}

/// 1 where a condition holds, else 0 (a property checked as an equation with 1).
template <class S> S indicator(bool holds) { return holds ? S(1) : S(0); }

/// A drawn rotation of R^n: the product of Givens rotations G_ab(theta_ab), a < b, each angle
/// with rational cos and sin (any rotation is such a product).
template <class S> Mat<S> draw_rotation(Draw<S> &d, Eigen::Index n) {
  using std::cos;
  using std::sin;
  Mat<S> P = Mat<S>::Identity(n, n);
  for (Eigen::Index a = 0; a < n; ++a)
    for (Eigen::Index b = a + 1; b < n; ++b) {
      const S t = d.angle();
      Mat<S> G = Mat<S>::Identity(n, n);
      G(a, a) = G(b, b) = S(cos(t));
      G(a, b) = S(-sin(t)), G(b, a) = S(sin(t));
      P = (P * G).eval();
    }
  return P;
}

/// A (x) B: block (a, b) is A_ab B.
template <class S> Mat<S> kron(const Mat<S> &A, const Mat<S> &B) {
  Mat<S> out(A.rows() * B.rows(), A.cols() * B.cols());
  for (Eigen::Index a = 0; a < A.rows(); ++a)
    for (Eigen::Index b = 0; b < A.cols(); ++b)
      out.block(a * B.rows(), b * B.cols(), B.rows(), B.cols()) = A(a, b) * B;
  return out;
}

/// P (x) P (x) ... (x) P, p factors (the proof of Proposition 3, step 2); the first factor's
/// index varies slowest, as in the reference's tensor power.
template <class S> Mat<S> kron_power(const Mat<S> &P, int p) {
  Mat<S> out = P;
  for (int i = 1; i < p; ++i)
    out = kron(out, P);
  return out;
}

/// n^p.
inline Eigen::Index int_power(Eigen::Index n, int p) {
  Eigen::Index out = 1;
  for (int i = 0; i < p; ++i)
    out *= n;
  return out;
}

/// The index tuple (i_1, ..., i_p) of basis tensor I of (R^d)^{(x)p}, i_1 slowest.
inline std::vector<Eigen::Index> tuple_of(Eigen::Index I, Eigen::Index d, int p) {
  std::vector<Eigen::Index> t(static_cast<std::size_t>(p));
  for (int k = p - 1; k >= 0; --k, I /= d)
    t[static_cast<std::size_t>(k)] = I % d;
  return t;
}

/// P-bar by its action on the basis (the proof of Proposition 3): column (i_1, ..., i_p) is
/// (P v_{i_1}) (x) (P v_{i_2}) (x) ... (x) (P v_{i_p}), v_i the standard basis.
template <class S> Mat<S> pbar_on_basis(const Mat<S> &P, int p) {
  const Eigen::Index d = P.rows(), n = int_power(d, p);
  Mat<S> out(n, n);
  for (Eigen::Index I = 0; I < n; ++I) {
    Mat<S> column = Mat<S>::Ones(1, 1);
    for (const Eigen::Index i : tuple_of(I, d, p))
      column = kron(column, Mat<S>(P.col(i)));
    out.col(I) = column;
  }
  return out;
}

/// det(M)^n, n >= 0.
template <class S> S det_power(const Mat<S> &M, Eigen::Index n) {
  const S det = M.determinant();
  S out(1);
  for (Eigen::Index i = 0; i < n; ++i)
    out *= det;
  return out;
}

/// A 1 x 1 matrix.
template <class S> Mat<S> scalar(const S &s) { return Mat<S>::Constant(1, 1, s); }

} // namespace ruleproof::proofs::notes::note004
