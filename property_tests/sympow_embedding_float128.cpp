// sympow embedding and rotations in float128: phi^p and the tensor power reproduce (x^T y)^p,
// Sym^p(P) acts on phi^p as P acts on R^d, is orthogonal for orthogonal P and multiplicative,
// and R(theta)^k = R(k theta). Each bound is gamma_n times the same computation on absolute
// values (the depth n is written beside it); then three statements of seed 004 checked.
#include <Eigen/LU>
#include <unsupported/Eigen/KroneckerProduct>

#include "reference/core/float128.hpp"
#include "sympow_properties.hpp"

using namespace ruleproof;
using namespace ruleproof::sympow;
using namespace ruleproof::sympow::test;
using S = float128;

namespace {

const int kPowers[] = {1, 2, 3, 4, 6};

Vec<S> random_vec(Eigen::Index d, double lo = -1, double hi = 1) {
  Vec<S> x(d);
  for (Eigen::Index i = 0; i < d; ++i)
    x(i) = from_double<S>(draw_real(lo, hi));
  return x;
}

Mat<S> random_mat(Eigen::Index d) {
  Mat<S> P(d, d);
  for (Eigen::Index i = 0; i < P.size(); ++i)
    P(i) = from_double<S>(draw_real(-1, 1));
  return P;
}

/// An orthogonal P: a product of m random Givens rotations, a reflection half the time.
/// Also returns |G_1| ... |G_m| (the magnitude of P's own rounding) and m.
struct Orthogonal {
  Mat<S> P, magnitude;
  int m;
};
Orthogonal random_orthogonal(Eigen::Index d) {
  using std::cos;
  using std::sin;
  Orthogonal o{Mat<S>::Identity(d, d), Mat<S>::Identity(d, d), draw(0, 6)};
  for (int r = 0; r < o.m && d > 1; ++r) {
    const Eigen::Index i = draw(0, static_cast<int>(d) - 2);
    const Eigen::Index j = draw(static_cast<int>(i) + 1, static_cast<int>(d) - 1);
    const S a = from_double<S>(draw_real(-3.2, 3.2));
    Mat<S> G = Mat<S>::Identity(d, d);
    G(i, i) = G(j, j) = cos(a);
    G(i, j) = -sin(a);
    G(j, i) = sin(a);
    o.P = G * o.P;
    o.magnitude = G.cwiseAbs() * o.magnitude;
  }
  if (draw(0, 1) == 1)
    o.P.row(0) *= S(-1);
  return o;
}

Tensor<S> as_tensor(const Mat<S> &m) {
  Tensor<S> t({static_cast<std::size_t>(m.rows()), static_cast<std::size_t>(m.cols())});
  for (Eigen::Index i = 0; i < m.rows(); ++i)
    for (Eigen::Index j = 0; j < m.cols(); ++j)
      t(i, j) = m(i, j);
  return t;
}

/// a vs b within gamma_n |M| elementwise.
bool close(const std::string &what, const Mat<S> &a, const Mat<S> &b, const Mat<S> &M, double n) {
  const S g = gamma_n<S>(n);
  Mat<S> bound = g * M.cwiseAbs();
  return within(what, as_tensor(a), as_tensor(b), as_tensor(bound));
}

double factorial(int p) { return p <= 1 ? 1 : p * factorial(p - 1); }

void log_seed() {
  const std::uint64_t seed = rc::detail::configuration().testParams.seed;
  INFO("RapidCheck seed " << seed << ": replay with RC_PARAMS=\"seed=" << seed << "\"");
}

} // namespace

TEST_CASE("phi_inner_product_equals_power_of_dot_product/float128", "[sympow][float128]") {
  log_seed();
  rc::prop("phi^p(x)^T phi^p(y) = (x^T y)^p = (x^(x)p)^T y^(x)p", [] {
    for (int p : kPowers) {
      const Eigen::Index d = draw(1, p == 6 ? 4 : 5);
      const Vec<S> x = random_vec(d, -2, 2), y = random_vec(d, -2, 2);
      const Vec<S> px = phi(x, p), py = phi(y, p);
      RC_ASSERT(px.size() == static_cast<Eigen::Index>(embedding_dim(d, p)));
      const Mat<S> lhs = Mat<S>::Constant(1, 1, px.dot(py));
      const Mat<S> rhs = Mat<S>::Constant(1, 1, power(S(x.dot(y)), p));
      const Mat<S> tp = Mat<S>::Constant(1, 1, tensor_power(x, p).dot(tensor_power(y, p)));
      // magnitude (|x|^T |y|)^p; depth: D (or d^p) sums, p+1 products, p powers of a d-sum
      const Mat<S> M = Mat<S>::Constant(1, 1, power(S(x.cwiseAbs().dot(y.cwiseAbs())), p));
      const double D = static_cast<double>(px.size()), dp = std::pow(double(d), p);
      RC_LOG() << "p=" << p << " d=" << d << "\n";
      RC_ASSERT(close("phi inner product", lhs, rhs, M, D + 2 * p + 2 + p * (d + 1.0)));
      RC_ASSERT(close("tensor power inner product", tp, rhs, M, dp + 2 * p + 2 + p * (d + 1.0)));
    }
  });
}

TEST_CASE("phi_of_Pk_equals_sym_power_of_P_times_phi_of_k_for_orthogonal_P/float128",
          "[sympow][float128]") {
  log_seed();
  rc::prop("phi^p(P k) = Sym^p(P) phi^p(k), implicit and explicit", [] {
    for (int p : kPowers) {
      const Eigen::Index d = draw(1, p == 6 ? 3 : 4);
      const Orthogonal o = random_orthogonal(d);
      const Vec<S> k = random_vec(d);
      const Basis b = basis(d, p);
      const Vec<S> implicit = phi_of_product(b, o.P, k);
      const Vec<S> explicit_ = sym_power(o.P, p) * phi(k, p);
      // both sides' magnitude: phi^p(|P| |k|) = Sym^p(|P|) phi^p(|k|)
      const Vec<S> M = phi(Vec<S>(o.P.cwiseAbs() * k.cwiseAbs()), p);
      const double n = factorial(p) + 2 * p + d * p + b.size() + 10.0;
      RC_LOG() << "p=" << p << " d=" << d << "\n";
      RC_ASSERT(close("phi(Pk) vs Sym(P) phi(k)", implicit, explicit_, M, 2 * n));
    }
  });
}

TEST_CASE("sym_power_of_orthogonal_P_is_orthogonal/float128", "[sympow][float128]") {
  log_seed();
  rc::prop("Sym^p(P)^T Sym^p(P) = I", [] {
    for (int p : kPowers) {
      const Eigen::Index d = draw(1, p == 6 ? 3 : 4);
      const Orthogonal o = random_orthogonal(d);
      const Mat<S> Y = sym_power(o.P, p);
      const Mat<S> I = Mat<S>::Identity(Y.rows(), Y.cols());
      // rounding of Sym^p(P) and of the product, relative to Sym(|P|)^T Sym(|P|), plus P's
      // own departure from orthogonality: |P^T P - I| <= 2 gamma_{3m+d} M^T M, M = prod |G|,
      // which Sym^p (degree p) turns into p times that relative to Sym^p(M^T M).
      const Mat<S> M = sym_power(Mat<S>(o.magnitude.transpose() * o.magnitude), p);
      const double n = 2 * (factorial(p) + p + 3) + Y.rows() + 2 * p * (3.0 * o.m + d) + 2 * p;
      RC_LOG() << "p=" << p << " d=" << d << " m=" << o.m << "\n";
      RC_ASSERT(close("Sym(P)^T Sym(P) vs I", Y.transpose() * Y, I, M, n));
    }
  });
}

TEST_CASE("sym_power_is_multiplicative/float128", "[sympow][float128]") {
  log_seed();
  rc::prop("Sym^p(P Q) = Sym^p(P) Sym^p(Q) for any P, Q", [] {
    for (int p : kPowers) {
      const Eigen::Index d = draw(1, p == 6 ? 3 : 4);
      const Mat<S> P = random_mat(d), Q = random_mat(d);
      const Mat<S> lhs = sym_power(Mat<S>(P * Q), p);
      const Mat<S> rhs = sym_power(P, p) * sym_power(Q, p);
      const Mat<S> M = sym_power(Mat<S>(P.cwiseAbs() * Q.cwiseAbs()), p);
      const double n = 2 * (factorial(p) + p + 3) + lhs.rows() + p * d + 10.0;
      RC_LOG() << "p=" << p << " d=" << d << "\n";
      RC_ASSERT(close("Sym(PQ) vs Sym(P) Sym(Q)", lhs, rhs, M, 2 * n));
    }
  });
}

TEST_CASE("sym_power_entries_are_permanents_scaled_by_multiplicities/float128",
          "[sympow][float128]") {
  log_seed();
  rc::prop("Sym^p(P)_ab = per P[a, b] / sqrt(a! b!)", [] {
    for (int p : kPowers) {
      const Eigen::Index d = draw(1, p == 6 ? 2 : 3);
      const Mat<S> P = random_mat(d);
      const Mat<S> Y = sym_power(P, p);
      const Basis b = basis(d, p);
      Mat<S> per(Y.rows(), Y.cols()), M(Y.rows(), Y.cols());
      const double pf = factorial(p);
      for (Eigen::Index r = 0; r < Y.rows(); ++r)
        for (Eigen::Index c = 0; c < Y.cols(); ++c) {
          // a! = p! / multinomial(a)
          const S scale = S(1) / sqrt(S(pf / b.multinomial[r]) * S(pf / b.multinomial[c]));
          per(r, c) = permanent(P, b.multiset(r), b.multiset(c), p) * scale;
          M(r, c) = permanent(Mat<S>(P.cwiseAbs()), b.multiset(r), b.multiset(c), p) * scale;
        }
      RC_LOG() << "p=" << p << " d=" << d << "\n";
      RC_ASSERT(close("Sym(P) vs scaled permanents", Y, per, M, 2 * (pf + p + 10)));
    }
  });
}

TEST_CASE("rotary_power_equals_rotary_of_multiple/float128", "[sympow][float128]") {
  log_seed();
  rc::prop("R(theta)^k = R(k theta)", [] {
    const std::size_t d = 2 * static_cast<std::size_t>(draw(1, 4));
    const bool seed_rates = draw(0, 1) == 1;
    Vec<S> theta = seed_rates ? rotary_rates<S>(d, draw_real(2, 10000)) : random_vec(d / 2, -7, 7);
    const int k = draw(0, 40);
    const Mat<S> R = rotary_matrix(theta);
    Mat<S> Rk = Mat<S>::Identity(d, d), Rabs = Mat<S>::Identity(d, d);
    for (int i = 0; i < k; ++i)
      Rk = R * Rk, Rabs = R.cwiseAbs() * Rabs;
    const Mat<S> Rkt = rotary_matrix(Vec<S>(S(k) * theta));
    // LHS: k products of 2-term sums of entries with relative error u: gamma_{3k+2} |R|^k.
    // RHS: sin, cos of k theta (absolute error (k |theta| + 2) u) on the block pattern.
    double theta_max = 0;
    for (Eigen::Index c = 0; c < theta.size(); ++c)
      theta_max = std::max(theta_max, std::abs(to_double(theta(c))));
    Mat<S> pattern = rotary_matrix(Vec<S>(Vec<S>::Zero(theta.size())));
    pattern.setZero();
    for (Eigen::Index c = 0; c < theta.size(); ++c)
      pattern.block(2 * c, 2 * c, 2, 2).setOnes();
    const Mat<S> bound =
        gamma_n<S>(3.0 * k + 2) * Rabs + gamma_n<S>(2 * (k * theta_max + 2)) * pattern;
    RC_LOG() << "d=" << d << " k=" << k << " seed_rates=" << seed_rates << "\n";
    RC_ASSERT(within("R^k vs R(k theta)", as_tensor(Rk), as_tensor(Rkt), as_tensor(bound)));
  });
}

// ---- Seed 004 statements, checked on fixed inputs ----------------------------------------

TEST_CASE("seed004_learned_rotary_scores_need_the_transpose_of_R", "[sympow][float128][seed]") {
  // Section 3.2 writes B_ij = (Q_i R(c_ij theta) K_j)^p with c_ij = sum_{k=j+1}^i beta_k.
  // From the recurrence, Q'_i^T K'_j = Q_i^T R(mu_i)^T R(mu_j) K_j = Q_i^T R(c_ij theta)^T K_j.
  const std::size_t d = 4;
  const Vec<S> theta = rotary_rates<S>(d, 10);
  const S beta_i = from_double<S>(1.5), beta_j = from_double<S>(0.5);
  const Vec<S> mu_j = beta_j * theta, mu_i = mu_j + beta_i * theta;
  Vec<S> Q(4), K(4);
  Q << S(1), S(2), S(-1), S(0.5);
  K << S(0.25), S(-1), S(2), S(1);
  const S definition = rotate(mu_i, Q).dot(rotate(mu_j, K));
  const Mat<S> Rc = rotary_matrix(Vec<S>(beta_i * theta)); // c_ij = beta_i (j = i - 1)
  const S as_written = Q.dot(Rc * K), corrected = Q.dot(Rc.transpose() * K);
  const double bound = to_double(gamma_n<S>(20) * S(16));
  INFO("definition " << to_double(definition) << ", as written " << to_double(as_written)
                     << ", corrected " << to_double(corrected));
  CHECK(std::abs(to_double(S(definition - corrected))) <= bound);
  CHECK(std::abs(to_double(S(definition - as_written))) > 1e-3);
}

TEST_CASE("seed004_theta_1_is_a_full_turn", "[sympow][float128][seed]") {
  // theta_i = 2 pi / N^(2(i-1)/d) gives theta_1 = 2 pi for every N: the rates lie in
  // (0, 2 pi], not (0, 2 pi), and under fixed rotary the first pair never turns.
  for (double N : {2.0, 64.0, 10000.0}) {
    const Vec<S> theta = rotary_rates<S>(8, N);
    CHECK(theta(0) == S(2) * pi<S>());
    const Mat<S> R = rotary_matrix(theta);
    CHECK(abs(R(1, 0)) <= S(8) * scalar_traits<S>::epsilon()); // sin(2 pi) = 0 to rounding
    CHECK(abs(R(0, 0) - S(1)) <= S(8) * scalar_traits<S>::epsilon());
  }
}

TEST_CASE("seed004_determinant_of_tensor_power_is_det_P_to_p_d_to_p_minus_1",
          "[sympow][float128][seed]") {
  // Appendix A.2, step 2, writes det(P (x) ... (x) P) = det(P)^(p d); with
  // det(A (x) B) = det(A)^dim(B) det(B)^dim(A), the p-fold power has det(P)^(p d^(p-1)).
  // Both are 1 for a rotation, so the conclusion stands; the exponent does not (p = 3, d = 2).
  Mat<S> P(2, 2);
  P << S(2), S(0), S(0), S(1); // det 2
  const Mat<S> P2 = Eigen::kroneckerProduct(P, P).eval();
  const Mat<S> P3 = Eigen::kroneckerProduct(P2, P).eval();
  const S det = P3.determinant();
  CHECK(det == S(4096)); // 2^(3 * 2^2)
  CHECK(det != S(64));   // 2^(3 * 2), the seed's exponent
}
