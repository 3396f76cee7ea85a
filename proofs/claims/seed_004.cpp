// ruleproof: the claims of seed 004 (symmetric power transformers with data-dependent gating
// and rotations, conformal-sympow). The truth is the reference: sympow's embedding phi^p and
// tensor power, the rotary matrix R(theta) and rates, Sym^p(P), the cumulative log-gates and
// angles, and the recurrent form (the definition). Layouts and drawn heads:
// seed_004_support.hpp.
#include "claims.hpp"
#include "seed_004_support.hpp"

#include "reference/softmax_attn/softmax_attn.hpp"

namespace ruleproof::proofs::notes {
namespace {

using namespace note004;

/// Claims with rotations count K in angle pairs: d = 2K = 4 features, D = 10 at p = 2.
const Sizes pairs{6, 2, 2, 3};

Claim sized(Claim c, const Sizes &sizes) {
  c.sizes = sizes;
  return c;
}

Claim correcting(Claim c, const std::string &id) {
  c.correction_of = id;
  return c;
}

// ---- 2.1 Symmetric Power Transformers ----

/// For every d from `first_d` to K and p = 2, 3: the reference embedding's coordinates D
/// against C(d+p-1, p), and whether d < D < d^p.
Check dimensions(std::size_t first_d) {
  return check_of([first_d](auto &d) {
    using S = scalar_of<decltype(d)>;
    std::vector<Mat<S>> lhs, rhs;
    for (std::size_t dim = first_d; dim <= d.sizes.K; ++dim)
      for (const int p : {2, 3}) {
        const auto D = static_cast<Eigen::Index>(sympow::basis(dim, p).size());
        const auto n = static_cast<Eigen::Index>(dim);
        Mat<S> l(1, 3), r(1, 3);
        l << S(int(D)), indicator<S>(n < D), indicator<S>(D < int_power(n, p));
        r << S(int(sympow::binomial(dim + p - 1, p))), S(1), S(1);
        lhs.push_back(l), rhs.push_back(r);
      }
    return sides_of(lhs, rhs);
  });
}

std::vector<Claim> background() {
  const Source src{seed_004, "2.1 Symmetric Power Transformers", ""};
  std::vector<Claim> out;
  out.push_back(claim(
      "004.sympow.attention", {seed_004, "2.1 Symmetric Power Transformers", "(sympow)"},
      R"(A_{ij}=\frac{B_{ij}}{\sum_{k=1}^{i}B_{ik% }}\qquad B_{ij}=(Q_{i}^{T}K_{j})^{p}\qquad\text{(sympow)})",
      "Y_i = sum_{j<=i} A_ij V_j, A_ij = B_ij / sum_{k<=i} B_ik, B_ij = (Q_i^T K_j)^p: the "
      "reference's sympow output (p = 2, no rotation, no gate)",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const SympowHead<S> x = draw_sympow(d, {});
        const Mat<S> Y = attention(x.v, [&](Eigen::Index i, Eigen::Index j) {
          return kernel(row(x.q, i), row(x.k, j), x.p);
        });
        return Sides<S>{Y, sympow::recurrent_head(x).o};
      })));
  out.push_back(claim("004.sympow.kernel", src, R"(\phi^{p}(v)^{T}\phi^{p}(w)=(v^{T}w)^{p})",
                      "phi^p(v)^T phi^p(w) = (v^T w)^p for p = 1, 2, 3, 4 (phi^p the reference's "
                      "symmetric power embedding)",
                      check_of([](auto &d) {
                        using S = scalar_of<decltype(d)>;
                        const Vec<S> v = d.values(d.sizes.K, 1).col(0);
                        const Vec<S> w = d.values(d.sizes.K, 1).col(0);
                        Mat<S> lhs(1, 4), rhs(1, 4);
                        for (int p = 1; p <= 4; ++p) {
                          lhs(0, p - 1) = sympow::phi(v, p).dot(sympow::phi(w, p));
                          rhs(0, p - 1) = kernel(v, w, p);
                        }
                        return Sides<S>{lhs, rhs};
                      })));
  out.push_back(claim(
      "004.sympow.recurrent", src,
      R"(Y_{i}=\frac{S_{i}\phi^{p}(Q_{i})}{Z_{i}\phi^{p}(Q_{i})}\qquad Z_{i}=Z_{i-1}+% \phi^{p}(K_{i})^{T}\qquad S_{i}=S_{i-1}+V_{i}\phi^{p}(K_{i})^{T})",
      "Z_i = Z_{i-1} + phi^p(K_i)^T, S_i = S_{i-1} + V_i phi^p(K_i)^T from S_0 = 0, Z_0 = 0, "
      "Y_i = S_i phi^p(Q_i) / (Z_i phi^p(Q_i)): the reference's states (S_i^T, Z_i^T the columns "
      "of its D x (V+1) state) and outputs",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const SympowHead<S> x = draw_sympow(d, {});
        return traces(note_recurrence(x, note_angles(x)), reference(x));
      })));
  out.push_back(
      claim("004.sympow.dimensions", src, R"((hence the name symmetric power). Thus D<<d)",
            "phi^p: R^d -> R^D with D = C(d+p-1, p) (the reference embedding's coordinates) and "
            "D << d^p, read with A.4's 'd < D < d^p': every d <= K, p = 2, 3",
            dimensions(1)));
  Claim dims = correcting(
      claim("004.sympow.dimensions.corrected", src,
            R"((hence the name symmetric power). Thus D<<d)",
            "for d >= 2 (p >= 2): D = C(d+p-1, p) and d < D < d^p; at d = 1, D = d = d^p = 1",
            dimensions(2)),
      "004.sympow.dimensions");
  dims.min_sizes.K = 2;
  out.push_back(dims);
  return out;
}

// ---- 2.2 Compatibility of Rotary Embeddings with Sympow ----

/// R^n as R(n theta) (004.rotation.power): exact, its entries of degree 2n in the draws.
template <class S> Mat<S> rotary_power(const Vec<S> &theta, Eigen::Index n) {
  return sympow::rotary_matrix(Vec<S>(S(int(n)) * theta));
}

/// (Q_i^T (R^{i+s})^T R^{j+s} K_j)^p for j <= i: the scores with every position moved by s.
template <class S> Mat<S> scores_shifted(const SympowHead<S> &x, Eigen::Index s) {
  return lower<S>(x.q.rows(), [&](Eigen::Index i, Eigen::Index j) {
    const Vec<S> key = rotary_power(x.theta, j + 1 + s) * row(x.k, j);
    return kernel(row(x.q, i), Vec<S>(rotary_power(x.theta, i + 1 + s).transpose() * key), x.p);
  });
}

/// (Q_i^T (R^{i-j})^T K_j)^p for j <= i (sympow rotary).
template <class S> Mat<S> scores_relative(const SympowHead<S> &x) {
  return lower<S>(x.q.rows(), [&](Eigen::Index i, Eigen::Index j) {
    return kernel(row(x.q, i), Vec<S>(rotary_power(x.theta, i - j).transpose() * row(x.k, j)), x.p);
  });
}

/// theta_i = 2 pi / N^{2(i-1)/d}, i = 1..d/2, as section 2.2 writes it.
template <class S> Vec<S> rates_as_written(Eigen::Index dim, Eigen::Index N) {
  using std::exp;
  using std::log;
  Vec<S> theta(dim / 2);
  for (Eigen::Index i = 1; i <= theta.size(); ++i)
    theta(i - 1) = S(2) * sympow::pi<S>() / exp(S(int(2 * (i - 1))) / S(int(dim)) * log(S(int(N))));
  return theta;
}

/// "theta_i distributed in the range (0, 2 pi)": open as written, (0, 2 pi] corrected (with
/// the reference's rates and R(theta_1) = I); N, the maximum document size, is T.
Check rates_range(bool corrected) {
  return check_of([corrected]<class S>([[maybe_unused]] Draw<S> &d) -> Sides<S> {
    if constexpr (std::is_same_v<S, Exact>)
      throw NotExact("2 pi is not rational");
    else {
      const auto dim = static_cast<Eigen::Index>(2 * d.sizes.K);
      const auto N = static_cast<Eigen::Index>(d.sizes.T);
      const S two_pi = S(2) * sympow::pi<S>();
      const Vec<S> theta = rates_as_written<S>(dim, N);
      Mat<S> inside(1, theta.size());
      for (Eigen::Index i = 0; i < theta.size(); ++i)
        inside(0, i) =
            indicator<S>(theta(i) > S(0) && (corrected ? theta(i) <= two_pi : theta(i) < two_pi));
      const Mat<S> ones = Mat<S>::Ones(1, theta.size());
      if (!corrected)
        return Sides<S>{inside, ones};
      return parts<S>({inside, theta, sympow::rotary_matrix(Vec<S>(theta.head(1)))},
                      {ones, sympow::rotary_rates<S>(static_cast<std::size_t>(dim), double(N)),
                       Mat<S>::Identity(2, 2)});
    }
  });
}

std::vector<Claim> rotary() {
  const Source src{seed_004, "2.2 Compatibility of Rotary Embeddings with Sympow", ""};
  const Source eq{seed_004, "2.2 Compatibility of Rotary Embeddings with Sympow",
                  "(sympow rotary)"};
  std::vector<Claim> out;
  out.push_back(sized(
      claim("004.rotary.positions", {seed_004, "3.1 Data Dependent Gating", ""},
            R"(K^{\prime}_{i}=R^{i}K_{i}=R(\mu_{i})K_{i})",
            "Q'_i = R^i Q_i = R(mu_i) Q_i and K'_i = R^i K_i = R(mu_i) K_i, R = R(theta), "
            "mu_i = mu_{i-1} + theta from mu_0 = 0: the reference's rotated queries and keys",
            check_of([](auto &d) {
              using S = scalar_of<decltype(d)>;
              const SympowHead<S> x = draw_sympow(d, {.rotary = true});
              const Mat<S> mu = note_angles(x), mu_ref = sympow::cumulative_angles(x.beta, x.theta);
              const auto by_angle = [&](const Mat<S> &m) {
                return by_rows<S>(m.rows(), [&](Eigen::Index r) { return turned(mu, m, r); });
              };
              const Mat<S> q_ref = sympow::rotate_rows(mu_ref, x.q);
              const Mat<S> k_ref = sympow::rotate_rows(mu_ref, x.k);
              return parts<S>({turned_by_powers(x.theta, x.q), by_angle(x.q),
                               turned_by_powers(x.theta, x.k), by_angle(x.k)},
                              {q_ref, q_ref, k_ref, k_ref});
            })),
      pairs));
  out.push_back(sized(
      claim(
          "004.rotary.scores", eq,
          R"(B_{ij}=\left({Q^{\prime}_{i}}^{T}K^{\prime}_{j}\right)^{p}=\left({Q_{i}}^{T}(R% ^{i-j})^{T}K_{j}\right)^{p})",
          "B_ij = (Q'_i^T K'_j)^p = (Q_i^T (R^{i-j})^T K_j)^p, Q'_i = R^i Q_i, K'_j = R^j K_j, "
          "R^{i-j} = R((i-j) theta), j <= i: both against (Q'_i^T K'_j)^p with the reference's "
          "rotated queries and keys",
          check_of([](auto &d) {
            using S = scalar_of<decltype(d)>;
            const SympowHead<S> x = draw_sympow(d, {.rotary = true});
            const Mat<S> mu = sympow::cumulative_angles(x.beta, x.theta);
            const Mat<S> q_ref = sympow::rotate_rows(mu, x.q), k_ref = sympow::rotate_rows(mu, x.k);
            const Mat<S> qp = turned_by_powers(x.theta, x.q), kp = turned_by_powers(x.theta, x.k);
            const auto scores = [&](const Mat<S> &q, const Mat<S> &k) {
              return lower<S>(x.q.rows(), [&](Eigen::Index i, Eigen::Index j) {
                return kernel(row(q, i), row(k, j), x.p);
              });
            };
            const Mat<S> truth = scores(q_ref, k_ref);
            return parts<S>({scores(qp, kp), scores_relative(x)}, {truth, truth});
          })),
      pairs));
  out.push_back(sized(
      claim("004.rotary.even_p_distribution", src,
            R"(rotary embeddings are compatible with the attention formulation when)",
            "for even p (2, 4) each B_ij = (Q_i^T (R^{i-j})^T K_j)^p >= 0, so A_i1..A_ii lie in "
            "[0, 1] and sum to 1; with and without rotation (theta = 0 is section 2.1's claim)",
            check_of([](auto &d) {
              using S = scalar_of<decltype(d)>;
              std::vector<Mat<S>> lhs, rhs;
              for (const int p : {2, 4})
                for (const bool rotating : {true, false}) {
                  SympowHead<S> x = draw_sympow(d, {.rotary = true}, p);
                  if (!rotating)
                    x.theta.setZero();
                  const Mat<S> B = scores_relative(x);
                  const Mat<S> A =
                      attention(Mat<S>(Mat<S>::Identity(B.rows(), B.rows())),
                                [&](Eigen::Index i, Eigen::Index j) { return B(i, j); });
                  const Eigen::Index T = B.rows();
                  lhs.push_back(lower<S>(T, [&](Eigen::Index i, Eigen::Index j) {
                    return indicator<S>(B(i, j) >= S(0) && A(i, j) >= S(0) && A(i, j) <= S(1));
                  }));
                  lhs.push_back(A.rowwise().sum());
                  rhs.push_back(causal_mask<S>(T));
                  rhs.push_back(Mat<S>::Ones(T, 1));
                }
              return parts(lhs, rhs);
            })),
      pairs));
  out.push_back(sized(
      claim("004.rotary.relative", src, R"(the effect of rotation of the embeddings is relative)",
            "the rotation's effect depends only on i - j: moving every position by s = 1, 2, 3 "
            "leaves B_ij = (Q_i^T (R^i)^T R^j K_j)^p unchanged (R^n = R(n theta))",
            check_of([](auto &d) {
              using S = scalar_of<decltype(d)>;
              const SympowHead<S> x = draw_sympow(d, {.rotary = true});
              const Mat<S> B = scores_shifted(x, 0);
              return parts<S>({scores_shifted(x, 1), scores_shifted(x, 2), scores_shifted(x, 3)},
                              {B, B, B});
            })),
      pairs));
  out.push_back(
      sized(claim("004.rotary.rates_range", src, R"(distributed in the range (0,2π))",
                  "theta_i = 2 pi / N^{2(i-1)/d}, i = 1..d/2, lie in the open range (0, 2 pi) "
                  "(N the maximum document size, here T)",
                  rates_range(false)),
            pairs));
  out.push_back(sized(
      correcting(claim("004.rotary.rates_range.corrected", src,
                       R"(\theta_{i}=\frac{2\pi}{N^{\frac{2(i-1)}{d}}})",
                       "theta_i = 2 pi / N^{2(i-1)/d} lie in (0, 2 pi], theta_1 = 2 pi exactly so "
                       "R(theta_1) = I (the first pair never rotates); the formula is the "
                       "reference's rotary_rates",
                       rates_range(true)),
                 "004.rotary.rates_range"),
      pairs));
  Claim rec = claim(
      "004.rotary.recurrent", src,
      R"(Z_{i}=Z_{i-1}+\phi^{p}(R(\mu_{i})K_{i})^{T}\qquad S_{i}=S_{i-1}+V_{i}\phi^{p}(% R(\mu_{i})K_{i})^{T}\qquad\mu_{i}=\mu_{i-1}+\theta)",
      "Z_i = Z_{i-1} + phi^p(R(mu_i) K_i)^T, S_i = S_{i-1} + V_i phi^p(R(mu_i) K_i)^T, "
      "mu_i = mu_{i-1} + theta, Y_i = S_i phi^p(R(mu_i) Q_i) / (Z_i phi^p(R(mu_i) Q_i)); the "
      "note never gives mu_0");
  for (const bool from_zero : {true, false})
    rec.readings.push_back(
        {from_zero ? "mu_0 = 0" : "mu_0 any (drawn)",
         from_zero ? "mu_0 = 0: states and outputs are the reference's"
                   : "mu_0 drawn: the outputs are the reference's (the states are not compared)",
         check_of([from_zero](auto &d) {
           using S = scalar_of<decltype(d)>;
           const SympowHead<S> x = draw_sympow(d, {.rotary = true});
           const Vec<S> mu0 = from_zero ? Vec<S>(Vec<S>::Zero(x.theta.size())) : draw_angles(d);
           const Trace<S> note = note_recurrence(x, note_angles(x, mu0)), ref = reference(x);
           return from_zero ? traces(note, ref) : Sides<S>{note.Y, ref.Y};
         })});
  out.push_back(sized(rec, pairs));
  out.push_back(sized(
      claim(
          "004.prop1",
          {seed_004, "2.2 Compatibility of Rotary Embeddings with Sympow", "Proposition 1"},
          R"(\frac{(Q_{i}^{\prime T}K_{j}^{\prime})^{p}V_% {j}}{\sum_{k=1}^{i}(Q_{i}^{\prime T}K_{k}^{\prime})^{p}}\quad\text{ is % equivalent to })",
          "Y_i = sum_j (Q'_i^T K'_j)^p V_j / sum_k (Q'_i^T K'_k)^p (Q'_i = R^i Q_i, K'_j = R^j "
          "K_j) is the recurrent form's Y_i = S_i phi^p(R(mu_i) Q_i) / (Z_i phi^p(R(mu_i) Q_i)), "
          "the reference's fixed-rotary output",
          check_of([](auto &d) {
            using S = scalar_of<decltype(d)>;
            const SympowHead<S> x = draw_sympow(d, {.rotary = true});
            const Mat<S> qp = turned_by_powers(x.theta, x.q), kp = turned_by_powers(x.theta, x.k);
            const Mat<S> Y = attention(x.v, [&](Eigen::Index i, Eigen::Index j) {
              return kernel(row(qp, i), row(kp, j), x.p);
            });
            return Sides<S>{Y, sympow::recurrent_head(x).o};
          })),
      pairs));
  return out;
}

// ---- 3 Conformal Transformations ----

/// cos of the angle between u and w.
template <class S> S cos_angle(const Vec<S> &u, const Vec<S> &w) {
  using std::sqrt;
  return S(u.dot(w) / S(sqrt(S(u.squaredNorm())) * sqrt(S(w.squaredNorm()))));
}

/// A drawn orthogonal matrix that is no rotation (det -1): a rotation with one column negated.
template <class S> Mat<S> draw_reflection(Draw<S> &d, Eigen::Index n) {
  Mat<S> R = draw_rotation(d, n);
  R.col(0) = -R.col(0);
  return R;
}

std::vector<Claim> conformal() {
  const Source src{seed_004, "3 Conformal Transformations", ""};
  std::vector<Claim> out;
  out.push_back(claim(
      "004.conformal.angles", src, R"(\mathbf{T}(\mathbf{x})=s\mathbf{R}\mathbf{x})",
      "T(x) = s R x (s > 0, R^T R = I, here det R = -1) preserves angles, cos(Tx, Ty) = "
      "cos(x, y), and scales every length uniformly, |Tx| = s |x|",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        using std::sqrt;
        const auto n = static_cast<Eigen::Index>(d.sizes.K);
        const Mat<S> R = draw_reflection(d, n), X = d.values(d.sizes.T, d.sizes.K),
                     Y = d.values(d.sizes.T, d.sizes.K);
        const S s = d.positive();
        Mat<S> lhs(X.rows(), 2), rhs(X.rows(), 2);
        for (Eigen::Index r = 0; r < X.rows(); ++r) {
          const Vec<S> Tx = s * R * row(X, r), Ty = s * R * row(Y, r);
          lhs(r, 0) = cos_angle(Tx, Ty), rhs(r, 0) = cos_angle(row(X, r), row(Y, r));
          lhs(r, 1) = sqrt(S(Tx.squaredNorm())), rhs(r, 1) = s * sqrt(S(row(X, r).squaredNorm()));
        }
        return Sides<S>{lhs, rhs};
      })));
  out.push_back(claim(
      "004.conformal.update1", {seed_004, "3 Conformal Transformations", "(1)"},
      R"(S_{i}=S_{i-1}(s\mathbf{R})+V_{i}\phi^{p}(K_{i})^{T})",
      "S_i = S_{i-1}(s R) + V_i phi^p(K_i)^T right-multiplies the state by a conformal map: "
      "the rows of S_{i-1}(s R) keep their angles and scale by s, (S_{i-1} s R)(S_{i-1} s R)^T "
      "= s^2 S_{i-1} S_{i-1}^T (S_{i-1} drawn V x D, R orthogonal D x D)",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const Mat<S> prev = d.values(d.sizes.V, d.sizes.K);
        const Mat<S> R = draw_reflection(d, static_cast<Eigen::Index>(d.sizes.K));
        const S s = d.positive();
        const Mat<S> mapped = prev * (s * R);
        return Sides<S>{mapped * mapped.transpose(), s * s * prev * prev.transpose()};
      })));
  return out;
}

// ---- 3.1 Data Dependent Gating ----

/// sigma(z) = 1 / (1 + e^{-z}).
template <class S> S sigmoid(const S &z) {
  using std::exp;
  return S(S(1) / (S(1) + exp(S(-z))));
}

/// The attention form with B_ij = b_ij (Q'_i^T K'_j)^p, Q'_i = R(mu_i) Q_i (sympow+gating).
template <class S> Mat<S> gated_attention(const SympowHead<S> &x) {
  const Mat<S> mu = note_angles(x);
  return attention(x.v, [&](Eigen::Index i, Eigen::Index j) {
    return b(x, i, j) * kernel(turned(mu, x.q, i), turned(mu, x.k, j), x.p);
  });
}

std::vector<Claim> gating() {
  const Source src{seed_004, "3.1 Data Dependent Gating", ""};
  std::vector<Claim> out;
  Claim gamma = claim("004.gating.gamma", src, R"(\gamma_{i}=\sigma(W_{\gamma}X_{i}))",
                      "gamma_i = sigma(W_gamma X_i) lies in [0, 1], W_gamma in R^{d x 1}, X_i in "
                      "R^d: the product W_gamma X_i is defined for d = 1 only");
  for (const bool dot : {false, true})
    gamma.readings.push_back(
        {dot ? "W_gamma^T X_i (A.4: a dot product)" : "W_gamma X_i, a matrix product",
         dot ? "gamma_i = sigma(W_gamma^T X_i) in [0, 1]"
             : "gamma_i = sigma(W_gamma X_i) in [0, 1]",
         check_of([dot]<class S>(Draw<S> &d) -> Sides<S> {
           if constexpr (std::is_same_v<S, Exact>)
             throw NotExact("sigma(z) = 1 / (1 + e^{-z}) of a drawn z is not rational");
           const Mat<S> W = d.values(d.sizes.K, 1), X = d.values(d.sizes.T, d.sizes.K);
           if (!dot && W.cols() != X.cols()) // (d x 1)(d x 1): no product
             return Sides<S>{Mat<S>(0, 0), Mat<S>::Ones(X.rows(), 1)};
           return Sides<S>{by_rows<S>(X.rows(),
                                      [&](Eigen::Index r) {
                                        const S g = sigmoid(S(W.col(0).dot(row(X, r))));
                                        return Vec<S>::Constant(
                                            1, indicator<S>(g >= S(0) && g <= S(1)));
                                      }),
                           Mat<S>::Ones(X.rows(), 1)};
         })});
  out.push_back(gamma);
  out.push_back(sized(
      claim(
          "004.gating.recurrent", src,
          R"(Z_{i}=\gamma_{i}Z_{i-1}+\phi^{p}(K^{\prime}_{i})^{T}\qquad S_{i}=\gamma_{i}S_{% i-1}+V_{i}\phi^{p}(K^{\prime}_{i})^{T}\qquad\mu_{i}=\mu_{i-1}+\theta)",
          "Z_i = gamma_i Z_{i-1} + phi^p(K'_i)^T, S_i = gamma_i S_{i-1} + V_i phi^p(K'_i)^T, "
          "mu_i = mu_{i-1} + theta (mu_0 = 0), Y_i = S_i phi^p(Q'_i) / (Z_i phi^p(Q'_i)): the "
          "reference's gated rotary states and outputs",
          check_of([](auto &d) {
            using S = scalar_of<decltype(d)>;
            const SympowHead<S> x = draw_sympow(d, {.rotary = true, .gated = true});
            return traces(note_recurrence(x, note_angles(x)), reference(x));
          })),
      pairs));
  Claim bij = claim("004.gating.b_ij", src, R"(b_{ij}=\Pi_{k=j+1}^{i}\gamma_{m})",
                    "b_ij = prod_{k=j+1}^{i} gamma_m, j <= i, against the reference's decay "
                    "exp(G_i - G_j), G the cumulative log-gates; the note never defines m");
  for (const bool as_k : {true, false})
    bij.readings.push_back({as_k ? "gamma_m as gamma_k" : "gamma_m as gamma_i (the query's step)",
                            as_k ? "b_ij = prod_{k=j+1}^{i} gamma_k" : "b_ij = gamma_i^{i-j}",
                            check_of([as_k](auto &d) {
                              using S = scalar_of<decltype(d)>;
                              using std::exp;
                              const SympowHead<S> x = draw_sympow(d, {.gated = true});
                              const Vec<S> G = sympow::log_gate_cumsum(x.g);
                              const auto note = [&](Eigen::Index i, Eigen::Index j) {
                                S prod(1);
                                for (Eigen::Index k = j + 1; k <= i; ++k)
                                  prod *= gamma_at(x, as_k ? k : i);
                                return prod;
                              };
                              return Sides<S>{
                                  lower<S>(x.g.size(), note),
                                  lower<S>(x.g.size(), [&](Eigen::Index i, Eigen::Index j) {
                                    return S(exp(S(G(i) - G(j))));
                                  })};
                            })});
  out.push_back(bij);
  out.push_back(sized(
      claim(
          "004.prop2", {seed_004, "3.1 Data Dependent Gating", "Proposition 2"},
          R"(\frac{b_{ij}\left(Q_{i}^{\prime T}K^{\prime}_{j}\right)^{p% }V_{j}}{\sum_{k=1}^{i}b_{ik}(Q_{i}^{\prime T}K_{k}^{\prime})^{p}})",
          "Y_i = sum_j b_ij (Q'_i^T K'_j)^p V_j / sum_k b_ik (Q'_i^T K'_k)^p, b_ij = "
          "prod_{k=j+1}^i gamma_k, is the recurrent Y_i = S_i phi^p(Q'_i) / (Z_i phi^p(Q'_i)), "
          "the reference's gated rotary output",
          check_of([](auto &d) {
            using S = scalar_of<decltype(d)>;
            const SympowHead<S> x = draw_sympow(d, {.rotary = true, .gated = true});
            return Sides<S>{gated_attention(x), sympow::recurrent_head(x).o};
          })),
      pairs));
  return out;
}

// ---- 3.2 Data Dependent Rotations and 3.3 Conformal Sympow ----

/// The attention form with B_ij = b_ij (Q_i^T R(c_ij theta) K_j)^p, R transposed when asked;
/// b_ij = 1 when the head is ungated.
template <class S> Mat<S> learned_attention(const SympowHead<S> &x, bool transposed) {
  return attention(x.v, [&](Eigen::Index i, Eigen::Index j) {
    const Mat<S> R = sympow::rotary_matrix(Vec<S>(c(x, i, j) * x.theta));
    const Vec<S> rk = (transposed ? Mat<S>(R.transpose()) : R) * row(x.k, j);
    return b(x, i, j) * kernel(row(x.q, i), rk, x.p);
  });
}

/// B_ij of (sympow learned rotary) or (conformal-sympow) against the reference's output.
Check learned_scores(bool gated, bool transposed) {
  return check_of([=](auto &d) {
    using S = scalar_of<decltype(d)>;
    const SympowHead<S> x = draw_sympow(d, {.rotary = true, .gated = gated, .learned_rates = true});
    return Sides<S>{learned_attention(x, transposed), sympow::recurrent_head(x).o};
  });
}

std::vector<Claim> learned_rates() {
  const Source src{seed_004, "3.2 Data Dependent Rotations", ""};
  const Source eq{seed_004, "3.2 Data Dependent Rotations", "(sympow learned rotary)"};
  std::vector<Claim> out;
  out.push_back(claim(
      "004.rates.beta_range", src, R"(\beta_{i}=1+\text{tanh}(W_{\beta}X_{i}))",
      "beta_i = 1 + tanh(W_beta X_i) lies in (0, 2), W_beta X_i the dot product of A.4",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        using std::exp;
        const Mat<S> W = d.values(d.sizes.K, 1), X = d.values(d.sizes.T, d.sizes.K);
        Mat<S> inside(X.rows(), 1);
        for (Eigen::Index r = 0; r < X.rows(); ++r) {
          const S e = exp(S(2 * W.col(0).dot(row(X, r)))); // tanh z = (e^{2z} - 1) / (e^{2z} + 1)
          const S beta = S(1) + (e - S(1)) / (e + S(1));
          inside(r, 0) = indicator<S>(beta > S(0) && beta < S(2));
        }
        return Sides<S>{inside, Mat<S>::Ones(X.rows(), 1)};
      })));
  Claim cij = claim("004.rates.c_ij", src, R"(c_{ij}=\sum_{k=j+1}^{i}\beta_{i})",
                    "c_ij = sum_{k=j+1}^{i} beta_i, so that c_ij theta = mu_i - mu_j (the angle "
                    "between query i and key j, the reference's cumulative angles), j <= i");
  for (const bool as_k : {false, true})
    cij.readings.push_back(
        {as_k ? "summand beta_k" : "summand beta_i, as written",
         as_k ? "c_ij = sum_{k=j+1}^{i} beta_k" : "c_ij = sum_{k=j+1}^{i} beta_i = (i - j) beta_i",
         check_of([as_k](auto &d) {
           using S = scalar_of<decltype(d)>;
           const SympowHead<S> x = draw_sympow(d, {.rotary = true, .learned_rates = true});
           const Mat<S> mu = sympow::cumulative_angles(x.beta, x.theta);
           std::vector<Mat<S>> lhs, rhs;
           for (Eigen::Index i = 0; i < mu.rows(); ++i)
             for (Eigen::Index j = 0; j <= i; ++j) {
               S cij(0);
               for (Eigen::Index k = j + 1; k <= i; ++k)
                 cij += x.beta(as_k ? k : i);
               lhs.push_back(cij * x.theta.transpose());
               rhs.push_back(mu.row(i) - mu.row(j));
             }
           return sides_of(lhs, rhs);
         })});
  out.push_back(sized(cij, pairs));
  out.push_back(sized(
      claim(
          "004.rates.learned_rotary", eq,
          R"(B_{ij}=\left(Q_{i}R(c_{ij}\theta)K_{j}\right)^{p}\qquad\text{(sympow learned % rotary)})",
          "B_ij = (Q_i^T R(c_ij theta) K_j)^p (Q_i R read as Q_i^T R; c_ij = sum_{k=j+1}^i beta_k) "
          "gives the reference's output with rates mu_i = mu_{i-1} + beta_i theta",
          learned_scores(false, false)),
      pairs));
  out.push_back(sized(
      correcting(
          claim(
              "004.rates.learned_rotary.corrected", eq,
              R"(B_{ij}=\left(Q_{i}R(c_{ij}\theta)K_{j}\right)^{p}\qquad\text{(sympow learned % rotary)})",
              "B_ij = (Q_i^T R(c_ij theta)^T K_j)^p = ((R(mu_i) Q_i)^T R(mu_j) K_j)^p: R "
              "transposed, as in (sympow rotary)",
              learned_scores(false, true)),
          "004.rates.learned_rotary"),
      pairs));
  return out;
}

/// Update (3) read with R-bar(theta, beta_i) = Sym^p(R(beta_i theta)) (transposed when asked)
/// and compared with update (2), the reference, in one sense of "equivalent".
enum class Sense { outputs, outputs_transposed, states, outputs_rotated_queries, states_in_basis };

Check update3(Sense sense) {
  return check_of([sense](auto &d) {
    using S = scalar_of<decltype(d)>;
    const SympowHead<S> x = draw_sympow(d, {.rotary = true, .gated = true, .learned_rates = true});
    const Trace<S> ref = reference(x);
    const Mat<S> mu = note_angles(x);
    const Eigen::Index D = dim_D(x);
    Mat<S> state = Mat<S>::Zero(x.v.cols(), D), Z = Mat<S>::Zero(1, D);
    Trace<S> note;
    std::vector<Mat<S>> in_basis;
    note.Y.resize(x.q.rows(), x.v.cols());
    for (Eigen::Index r = 0; r < x.q.rows(); ++r) {
      const Mat<S> Rbar =
          sympow::sym_power(sympow::rotary_matrix(Vec<S>(x.beta(r) * x.theta)), x.p);
      const Mat<S> step =
          gamma_at(x, r) * (sense == Sense::outputs_transposed ? Mat<S>(Rbar.transpose()) : Rbar);
      const Vec<S> phik = phi(x, row(x.k, r));
      Z = (Z * step + phik.transpose()).eval();
      state = (state * step + row(x.v, r) * phik.transpose()).eval();
      note.state.push_back(state), note.normaliser.push_back(Z);
      const Vec<S> query =
          sense == Sense::outputs_rotated_queries ? turned(mu, x.q, r) : row(x.q, r);
      const Vec<S> phiq = phi(x, query);
      note.Y.row(r) = (state * phiq).transpose() / S((Z * phiq)(0, 0));
      const Mat<S> basis = sympow::sym_power(R_at(mu, r), x.p); // Sym^p(R(mu_i))
      in_basis.push_back(ref.state[static_cast<std::size_t>(r)] * basis);
      in_basis.push_back(ref.normaliser[static_cast<std::size_t>(r)] * basis);
    }
    switch (sense) {
    case Sense::states: return traces(Trace<S>{note.state, note.normaliser, ref.Y}, ref);
    case Sense::states_in_basis: {
      std::vector<Mat<S>> mine;
      for (std::size_t r = 0; r < note.state.size(); ++r)
        mine.push_back(note.state[r]), mine.push_back(note.normaliser[r]);
      return parts(mine, in_basis);
    }
    default: return Sides<S>{note.Y, ref.Y};
    }
  });
}

std::vector<Claim> conformal_sympow() {
  const Source src{seed_004, "3.3 Conformal Sympow", ""};
  const Source eq{seed_004, "3.3 Conformal Sympow", "(conformal-sympow)"};
  std::vector<Claim> out;
  out.push_back(sized(
      claim(
          "004.conformal_sympow.scores", eq,
          R"(B_{ij}=b_{ij}\left(Q_{i}R(c_{ij}\theta)K_{j}\right)^{p}\qquad\text{(conformal-% sympow)})",
          "B_ij = b_ij (Q_i^T R(c_ij theta) K_j)^p (b_ij = prod_{k=j+1}^i gamma_k, c_ij = "
          "sum_{k=j+1}^i beta_k) gives the reference's conformal-sympow output",
          learned_scores(true, false)),
      pairs));
  out.push_back(sized(
      correcting(
          claim(
              "004.conformal_sympow.scores.corrected", eq,
              R"(B_{ij}=b_{ij}\left(Q_{i}R(c_{ij}\theta)K_{j}\right)^{p}\qquad\text{(conformal-% sympow)})",
              "B_ij = b_ij (Q_i^T R(c_ij theta)^T K_j)^p: R transposed",
              learned_scores(true, true)),
          "004.conformal_sympow.scores"),
      pairs));
  out.push_back(sized(
      claim(
          "004.conformal_sympow.recurrent", {seed_004, "3.3 Conformal Sympow", "(2)"},
          R"(Z_{i}=\gamma_{i}Z_{i-1}+\phi^{p}(R(\mu_{i})K_{i})^{T}\qquad S_{i}=\gamma_{i}S_% {i-1}+V_{i}\phi^{p}(R(\mu_{i})K_{i})^{T}\qquad\mu_{i}=\mu_{i-1}+\beta_{i}\theta)",
          "Z_i = gamma_i Z_{i-1} + phi^p(R(mu_i) K_i)^T, S_i = gamma_i S_{i-1} + V_i phi^p(R(mu_i) "
          "K_i)^T, mu_i = mu_{i-1} + beta_i theta (mu_0 = 0), outputs with R(mu_i) Q_i: the "
          "reference's conformal-sympow states and outputs",
          check_of([](auto &d) {
            using S = scalar_of<decltype(d)>;
            const SympowHead<S> x =
                draw_sympow(d, {.rotary = true, .gated = true, .learned_rates = true});
            return traces(note_recurrence(x, note_angles(x)), reference(x));
          })),
      pairs));
  Claim prop3 = claim(
      "004.prop3", {seed_004, "3.3 Conformal Sympow", "Proposition 3"},
      R"(\phi^{p}(Pk)=\bar{P}\phi^{p}(k))",
      "for a rotation P of R^d there is a rotation P-bar with phi^p(P k) = "
      "P-bar phi^p(k), P-bar^T P-bar = I (p = 2, 3; det P-bar = 1: 004.prop3.det_one); the note's "
      "phi^p is the symmetric embedding (P-bar D x D), its proof uses the tensor "
      "power (P-bar d^p x d^p)");
  for (const bool symmetric : {true, false})
    prop3.readings.push_back(
        {symmetric ? "phi^p symmetric, P-bar = Sym^p(P)" : "phi^p the tensor power, P-bar = P^(x)p",
         symmetric ? "phi^p(P k) = Sym^p(P) phi^p(k), Sym^p(P) orthogonal"
                   : "(P k)^(x)p = P^(x)p k^(x)p, P^(x)p orthogonal",
         check_of([symmetric](auto &d) {
           using S = scalar_of<decltype(d)>;
           const auto n = static_cast<Eigen::Index>(d.sizes.K);
           const Mat<S> P = draw_rotation(d, n);
           const Vec<S> k = d.values(d.sizes.K, 1).col(0);
           std::vector<Mat<S>> lhs, rhs;
           for (const int p : {2, 3}) {
             const Mat<S> Pbar = symmetric ? sympow::sym_power(P, p) : kron_power(P, p);
             const auto embed = [&](const Vec<S> &v) {
               return symmetric ? sympow::phi(v, p) : sympow::tensor_power(v, p);
             };
             lhs.push_back(embed(Vec<S>(P * k))), rhs.push_back(Pbar * embed(k));
             lhs.push_back(Pbar.transpose() * Pbar),
                 rhs.push_back(Mat<S>::Identity(Pbar.rows(), Pbar.rows()));
           }
           return parts(lhs, rhs);
         })});
  out.push_back(prop3);
  Claim u3 = claim(
      "004.conformal_sympow.update3", {seed_004, "3.3 Conformal Sympow", "(3)"},
      R"(Z_{i}=Z_{i-1}(\gamma_{i}\bar{R}(\theta,\beta_{i}))+\phi^{p}(K_{i})^{T}\qquad S% _{i}=S_{i-1}(\gamma_{i}\bar{R}(\theta,\beta_{i}))+V_{i}\phi^{p}(K_{i})^{T})",
      "Z_i = Z_{i-1}(gamma_i R-bar(theta, beta_i)) + phi^p(K_i)^T, S_i likewise (update "
      "(1) with s = gamma_i, R = R-bar) 'is equivalent to' update (2), the reference; "
      "the note defines neither R-bar nor the sense of 'equivalent'");
  const struct {
    Sense sense;
    const char *name, *statement;
  } senses[] = {
      {Sense::outputs, "R-bar = Sym^p(R(beta_i theta)), outputs, unrotated queries",
       "Y_i = S_i phi^p(Q_i) / (Z_i phi^p(Q_i)) from (3) equals (2)'s output"},
      {Sense::outputs_transposed, "R-bar = Sym^p(R(beta_i theta))^T, outputs, unrotated queries",
       "with R-bar transposed, Y_i = S_i phi^p(Q_i) / (Z_i phi^p(Q_i)) equals (2)'s output"},
      {Sense::states, "R-bar = Sym^p(R(beta_i theta)), states",
       "S_i and Z_i of (3) equal those of (2)"},
      {Sense::outputs_rotated_queries, "R-bar = Sym^p(R(beta_i theta)), outputs, rotated queries",
       "Y_i = S_i phi^p(R(mu_i) Q_i) / (Z_i phi^p(R(mu_i) Q_i)) from (3) equals (2)'s output"},
      {Sense::states_in_basis, "R-bar = Sym^p(R(beta_i theta)), states up to Sym^p(R(mu_i))",
       "S_i = S_i^(2) Sym^p(R(mu_i)) and Z_i = Z_i^(2) Sym^p(R(mu_i))"},
  };
  for (const auto &s : senses)
    u3.readings.push_back({s.name, s.statement, update3(s.sense)});
  out.push_back(sized(u3, pairs));
  return out;
}

// ---- A.1 Equivalence between Gating and ALiBi ----

std::vector<Claim> alibi() {
  const Source src{seed_004, "A.1 Equivalence between Gating and ALiBi", ""};
  std::vector<Claim> out;
  out.push_back(
      claim("004.alibi.bias_is_gate", src,
            R"(\text{exp}(Q_{i}^{T}K_{j}+m(j-i))=\gamma^{(i-j)}\text{exp}(Q_{i}^{T}K_{j}))",
            "exp(Q_i^T K_j + m (j - i)) = gamma^(i - j) exp(Q_i^T K_j), gamma = exp(-m), j <= i",
            check_of([](auto &d) {
              using S = scalar_of<decltype(d)>;
              using std::exp;
              const Mat<S> Q = d.values(d.sizes.T, d.sizes.K), K = d.values(d.sizes.T, d.sizes.K);
              const S m = d.positive(), gamma = exp(S(-m));
              Mat<S> lhs = Mat<S>::Zero(Q.rows(), Q.rows()), rhs = lhs;
              for (Eigen::Index i = 0; i < Q.rows(); ++i)
                for (Eigen::Index j = 0; j <= i; ++j) {
                  const S score = Q.row(i).dot(K.row(j));
                  lhs(i, j) = exp(S(score + m * S(int(j - i))));
                  S gamma_power(1); // gamma^(i - j)
                  for (Eigen::Index n = 0; n < i - j; ++n)
                    gamma_power *= gamma;
                  rhs(i, j) = gamma_power * exp(score);
                }
              return Sides<S>{lhs, rhs};
            })));
  out.push_back(claim("004.alibi.gamma_in_unit_interval", src, R"(\gamma=\text{exp}(-m))",
                      "0 < m < 1 gives 0 < gamma = exp(-m) < 1", check_of([](auto &d) {
                        using S = scalar_of<decltype(d)>;
                        using std::exp;
                        Mat<S> inside(1, d.sizes.T);
                        for (Eigen::Index t = 0; t < inside.cols(); ++t) {
                          const S gamma = exp(S(-d.positive()));
                          inside(0, t) = gamma > S(0) && gamma < S(1) ? S(1) : S(0);
                        }
                        return Sides<S>{inside, Mat<S>::Ones(1, inside.cols())};
                      })));
  return out;
}

// ---- A.2 Derivations ----

std::vector<Claim> rotations() {
  const Source proposition{seed_004, "A.2 Derivations / Proposition", ""};
  std::vector<Claim> out;
  out.push_back(
      claim("004.rotation.power", proposition, R"(R(\theta)^{k}=R(k\theta))",
            "R(theta)^k = R(k theta) for every positive integer k (block-diagonal rotary R)",
            check_of([](auto &d) {
              using S = scalar_of<decltype(d)>;
              const Vec<S> theta = draw_angles(d);
              const Mat<S> R = sympow::rotary_matrix(theta);
              std::vector<Mat<S>> powers, rotations;
              Mat<S> power = R;
              for (std::size_t k = 1; k <= d.sizes.T; ++k, power = (power * R).eval()) {
                powers.push_back(power);
                rotations.push_back(sympow::rotary_matrix(Vec<S>(S(int(k)) * theta)));
              }
              return sides_of(powers, rotations);
            })));
  out.push_back(claim(
      "004.rotation.product_step", {seed_004, "A.2 Derivations / Proof", ""},
      R"(R(\theta_{i})R(k\theta_{i})=R(\theta_{i}+(k\theta_{i}))=R((k+1)\theta_{i}))",
      "R(theta_i) R(k theta_i) = R((k + 1) theta_i), the induction step", check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const Vec<S> theta = draw_angles(d);
        std::vector<Mat<S>> products, rotations;
        for (std::size_t k = 1; k <= d.sizes.T; ++k) {
          products.push_back(sympow::rotary_matrix(theta) *
                             sympow::rotary_matrix(Vec<S>(S(int(k)) * theta)));
          rotations.push_back(sympow::rotary_matrix(Vec<S>(S(int(k + 1)) * theta)));
        }
        return sides_of(products, rotations);
      })));
  return out;
}

/// The note's Y_i = sum_{j<=i} w(i, j) / C(i) (w a vector), row by row.
template <class S, class W, class Cf> Mat<S> quotient_rows(Eigen::Index T, W w, Cf C) {
  return by_rows<S>(T, [&](Eigen::Index i) {
    Vec<S> sum = w(i, 0);
    for (Eigen::Index j = 1; j <= i; ++j)
      sum += w(i, j);
    return Vec<S>(sum / C(i));
  });
}

std::vector<Claim> proof_of_proposition1() {
  const Source src{seed_004, "A.2 Derivations / Proof of Proposition 1", ""};
  std::vector<Claim> out;
  out.push_back(sized(
      claim(
          "004.prop1.proof", src,
          R"(=\sum_{j=1}^{i}\frac{\left(Q_{i}^{T}(R^{i})^{T}R^{j}K_{j}\right)^% {p}V_{j}}{C_{i}})",
          "every line of the proof equals the reference's Y_i, with C_i = sum_k (Q'_i^T K'_k)^p: "
          "sum_j (Q_i^T (R^i)^T R^j K_j)^p V_j / C_i = sum_j (Q_i^T R(mu_i)^T R(mu_j) K_j)^p V_j "
          "/ C_i = sum_j ((R(mu_i) Q_i)^T R(mu_j) K_j)^p V_j / C_i = sum_j (phi^p(R(mu_i) Q_i)^T "
          "phi^p(R(mu_j) K_j)) V_j / C_i = sum_j V_j phi^p(R(mu_j) K_j)^T phi^p(R(mu_i) Q_i) / C_i "
          "= (sum_j V_j phi^p(R(mu_j) K_j)^T) phi^p(R(mu_i) Q_i) / C_i = S_i phi^p(R(mu_i) Q_i) / "
          "(Z_i phi^p(R(mu_i) Q_i)); the facts it uses: sum_j V_j phi^p(R(mu_j) K_j)^T = S_i and "
          "C_i = sum_k phi^p(Q'_i)^T phi^p(K'_k) = sum_k phi^p(R(mu_i) Q_i)^T phi^p(R(mu_k) K_k) = "
          "sum_k phi^p(R(mu_k) K_k)^T phi^p(R(mu_i) Q_i) = Z_i phi^p(R(mu_i) Q_i)",
          check_of([](auto &d) {
            using S = scalar_of<decltype(d)>;
            using Ix = Eigen::Index;
            const SympowHead<S> x = draw_sympow(d, {.rotary = true});
            const Trace<S> ref = reference(x);
            const Ix T = x.q.rows();
            const Mat<S> R = sympow::rotary_matrix(x.theta), mu = note_angles(x);
            const Mat<S> qp = turned_by_powers(x.theta, x.q), kp = turned_by_powers(x.theta, x.k);
            const auto Rq = [&](Ix i) { return turned(mu, x.q, i); }; // R(mu_i) Q_i
            const auto Rk = [&](Ix j) { return turned(mu, x.k, j); };
            const auto phiq = [&](Ix i) { return phi(x, Rq(i)); };
            const auto phik = [&](Ix j) { return phi(x, Rk(j)); };
            const auto V = [&](Ix j) { return row(x.v, j); };
            const auto C = [&](Ix i) { // C_i = sum_k (Q'_i^T K'_k)^p
              S sum(0);
              for (Ix k = 0; k <= i; ++k)
                sum += kernel(row(qp, i), row(kp, k), x.p);
              return sum;
            };
            const auto line = [&](auto w) { return quotient_rows<S>(T, w, C); };
            const auto sum_VphiT = [&](Ix i) { // sum_{j<=i} V_j phi^p(R(mu_j) K_j)^T
              Mat<S> sum = V(0) * phik(0).transpose();
              for (Ix j = 1; j <= i; ++j)
                sum += V(j) * phik(j).transpose();
              return sum;
            };
            std::vector<Mat<S>> lhs{
                line([&](Ix i, Ix j) {
                  const Mat<S> m = matrix_power(R, i + 1).transpose() * matrix_power(R, j + 1);
                  return Vec<S>(kernel(row(x.q, i), Vec<S>(m * row(x.k, j)), x.p) * V(j));
                }),
                line([&](Ix i, Ix j) {
                  const Mat<S> m = R_at(mu, i).transpose() * R_at(mu, j);
                  return Vec<S>(kernel(row(x.q, i), Vec<S>(m * row(x.k, j)), x.p) * V(j));
                }),
                line([&](Ix i, Ix j) { return Vec<S>(kernel(Rq(i), Rk(j), x.p) * V(j)); }),
                line([&](Ix i, Ix j) { return Vec<S>(S(phiq(i).dot(phik(j))) * V(j)); }),
                line([&](Ix i, Ix j) { return Vec<S>((V(j) * phik(j).transpose()) * phiq(i)); }),
                by_rows<S>(T, [&](Ix i) { return Vec<S>(sum_VphiT(i) * phiq(i) / C(i)); }),
                by_rows<S>(T, [&](Ix i) {
                  return Vec<S>(ref.state[std::size_t(i)] * phiq(i) /
                                S((ref.normaliser[std::size_t(i)] * phiq(i))(0, 0)));
                })};
            std::vector<Mat<S>> rhs(lhs.size(), ref.Y);
            for (Ix i = 0; i < T; ++i) {
              const Mat<S> Zphi = ref.normaliser[std::size_t(i)] * phiq(i);
              S form2(0), form3(0), form4(0);
              for (Ix k = 0; k <= i; ++k) {
                form2 += phi(x, row(qp, i)).dot(phi(x, row(kp, k)));
                form3 += phiq(i).dot(phik(k));
                form4 += phik(k).dot(phiq(i));
              }
              lhs.push_back(sum_VphiT(i)), rhs.push_back(ref.state[std::size_t(i)]);
              for (const S &form : {C(i), form2, form3, form4})
                lhs.push_back(scalar(form)), rhs.push_back(Zphi);
            }
            return parts(lhs, rhs);
          })),
      pairs));
  return out;
}

/// sum_{j<=upto} b_ij V_j phi^p(K'_j)^T, the gated state the proof of Proposition 2 writes.
template <class S, class Phik>
Mat<S> gated_sum(const SympowHead<S> &x, Phik phik, Eigen::Index i, Eigen::Index upto) {
  Mat<S> sum = Mat<S>::Zero(x.v.cols(), dim_D(x));
  for (Eigen::Index j = 0; j <= upto; ++j)
    sum += b(x, i, j) * row(x.v, j) * phik(j).transpose();
  return sum;
}

std::vector<Claim> proof_of_proposition2() {
  const Source src{seed_004, "A.2 Derivations / Proof of Proposition 2", ""};
  std::vector<Claim> out;
  out.push_back(sized(
      claim(
          "004.prop2.proof", src,
          R"(=\sum_{j=1}^{i}\frac{b_{ij}\left(\phi^{p}(Q^{\prime}_{i})^{T}\phi% ^{p}(K^{\prime}_{j})\right)V_{j}}{C_{i}})",
          "every line of the proof equals the reference's Y_i, with C_i = sum_k b_ik (Q'_i^T "
          "K'_k)^p: sum_j b_ij (phi^p(Q'_i)^T phi^p(K'_j)) V_j / C_i = sum_j b_ij V_j "
          "phi^p(K'_j)^T phi^p(Q'_i) / C_i = (sum_j b_ij V_j phi^p(K'_j)^T) phi^p(Q'_i) / C_i = "
          "S_i phi^p(Q'_i) / (Z_i phi^p(Q'_i)); the facts it uses: sum_j b_ij V_j phi^p(K'_j)^T = "
          "S_i and C_i = sum_k b_ik phi^p(Q'_i)^T phi^p(K'_k) = sum_k b_ik phi^p(K'_k)^T "
          "phi^p(Q'_i) = Z_i phi^p(Q'_i)",
          check_of([](auto &d) {
            using S = scalar_of<decltype(d)>;
            using Ix = Eigen::Index;
            const SympowHead<S> x = draw_sympow(d, {.rotary = true, .gated = true});
            const Trace<S> ref = reference(x);
            const Ix T = x.q.rows();
            const Mat<S> mu = note_angles(x);
            const auto phiq = [&](Ix i) { return phi(x, turned(mu, x.q, i)); }; // phi^p(Q'_i)
            const auto phik = [&](Ix j) { return phi(x, turned(mu, x.k, j)); };
            const auto V = [&](Ix j) { return row(x.v, j); };
            const auto C = [&](Ix i) { // C_i = sum_k b_ik (Q'_i^T K'_k)^p
              S sum(0);
              for (Ix k = 0; k <= i; ++k)
                sum += b(x, i, k) * kernel(turned(mu, x.q, i), turned(mu, x.k, k), x.p);
              return sum;
            };
            const auto line = [&](auto w) { return quotient_rows<S>(T, w, C); };
            std::vector<Mat<S>> lhs{
                line([&](Ix i, Ix j) {
                  return Vec<S>(b(x, i, j) * S(phiq(i).dot(phik(j))) * V(j));
                }),
                line([&](Ix i, Ix j) {
                  return Vec<S>(b(x, i, j) * (V(j) * phik(j).transpose()) * phiq(i));
                }),
                by_rows<S>(T,
                           [&](Ix i) { return Vec<S>(gated_sum(x, phik, i, i) * phiq(i) / C(i)); }),
                by_rows<S>(T, [&](Ix i) {
                  return Vec<S>(ref.state[std::size_t(i)] * phiq(i) /
                                S((ref.normaliser[std::size_t(i)] * phiq(i))(0, 0)));
                })};
            std::vector<Mat<S>> rhs(lhs.size(), ref.Y);
            for (Ix i = 0; i < T; ++i) {
              const Mat<S> Zphi = ref.normaliser[std::size_t(i)] * phiq(i);
              S form2(0), form3(0);
              for (Ix k = 0; k <= i; ++k) {
                form2 += b(x, i, k) * phiq(i).dot(phik(k));
                form3 += b(x, i, k) * phik(k).dot(phiq(i));
              }
              lhs.push_back(gated_sum(x, phik, i, i)), rhs.push_back(ref.state[std::size_t(i)]);
              for (const S &form : {C(i), form2, form3})
                lhs.push_back(scalar(form)), rhs.push_back(Zphi);
            }
            return parts(lhs, rhs);
          })),
      pairs));
  out.push_back(sized(
      claim(
          "004.prop2.induction", src,
          R"(=\gamma_{k+1}\left(\sum_{j=1}^{k}b_{kj}V_{j}\phi^{p}(K^{\prime}_{% j})^{T}\right)+V_{k+1}\phi^{p}(K^{\prime}_{k+1})^{T})",
          "S_i = sum_{j<=i} b_ij V_j phi^p(K'_j)^T by induction: S_1 = V_1 phi^p(K'_1)^T, and "
          "S_{k+1} = gamma_{k+1}(sum_{j<=k} b_kj V_j phi^p(K'_j)^T) + V_{k+1} phi^p(K'_{k+1})^T "
          "= (sum_{j<=k} b_(k+1)j V_j phi^p(K'_j)^T) + V_{k+1} phi^p(K'_{k+1})^T = sum_{j<=k+1} "
          "b_(k+1)j V_j phi^p(K'_j)^T, each against the reference's S_{k+1}, for every k >= 1 "
          "(the note assumes k > 1, which leaves S_2 out)",
          check_of([](auto &d) {
            using S = scalar_of<decltype(d)>;
            using Ix = Eigen::Index;
            const SympowHead<S> x = draw_sympow(d, {.rotary = true, .gated = true});
            const Trace<S> ref = reference(x);
            const Mat<S> mu = note_angles(x);
            const auto phik = [&](Ix j) { return phi(x, turned(mu, x.k, j)); };
            const auto newest = [&](Ix k) { return Mat<S>(row(x.v, k) * phik(k).transpose()); };
            std::vector<Mat<S>> lhs{newest(0)}, rhs{ref.state[0]};
            for (Ix k = 1; k < x.q.rows(); ++k) { // S_{k+1}, note's k = row k - 1
              lhs.push_back(gamma_at(x, k) * gated_sum(x, phik, k - 1, k - 1) + newest(k));
              lhs.push_back(gated_sum(x, phik, k, k - 1) + newest(k));
              lhs.push_back(gated_sum(x, phik, k, k));
              for (int line = 0; line < 3; ++line)
                rhs.push_back(ref.state[std::size_t(k)]);
            }
            return parts(lhs, rhs);
          })),
      pairs));
  return out;
}

/// det(P-bar) against det(P) raised to the exponent the proof (`as_written`: p d) or the
/// tensor-product rule (p d^{p-1}, and p D / d for Sym^p(P)) gives, P a drawn d x d matrix.
Check det_pbar(bool as_written) {
  return check_of([as_written](auto &d) {
    using S = scalar_of<decltype(d)>;
    const auto n = static_cast<Eigen::Index>(d.sizes.K);
    const Mat<S> P = d.values(d.sizes.K, d.sizes.K);
    std::vector<Mat<S>> lhs, rhs;
    for (const int p : {2, 3}) {
      lhs.push_back(scalar(S(kron_power(P, p).determinant())));
      rhs.push_back(scalar(det_power(P, as_written ? p * n : p * int_power(n, p - 1))));
      if (as_written)
        continue;
      const Mat<S> sym = sympow::sym_power(P, p);
      lhs.push_back(scalar(S(sym.determinant()))),
          rhs.push_back(scalar(det_power(P, p * sym.rows() / n)));
    }
    return parts(lhs, rhs);
  });
}

std::vector<Claim> proof_of_proposition3() {
  const Source src{seed_004, "A.2 Derivations / Proof of Proposition 3", ""};
  const Source step1{seed_004, "A.2 Derivations / Proof of Proposition 3 / Step 1", ""};
  const Source step2{seed_004, "A.2 Derivations / Proof of Proposition 3 / Step 2", ""};
  std::vector<Claim> out;
  out.push_back(claim(
      "004.prop3.pbar_on_basis", src,
      R"(\bar{P}(v_{i_{1}}\otimes v_{i_{2}}\otimes\dots\otimes v_{i_{p}})=(Pv_{i_{1}})% \otimes(Pv_{i_{2}})\otimes\dots\otimes(Pv_{i_{p}})\quad\text{for all }i_{1},i_%)",
      "P-bar defined on basis tensors by P-bar(v_i1 (x) ... (x) v_ip) = (P v_i1) (x) ... (x) "
      "(P v_ip) is P (x) P (x) ... (x) P (step 2) and maps x^(x)p to (P x)^(x)p, the "
      "reference's tensor power (P any d x d matrix, p = 2, 3)",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const Mat<S> P = d.values(d.sizes.K, d.sizes.K);
        const Vec<S> v = d.values(d.sizes.K, 1).col(0);
        std::vector<Mat<S>> lhs, rhs;
        for (const int p : {2, 3}) {
          const Mat<S> Pbar = pbar_on_basis(P, p);
          lhs.push_back(Pbar), rhs.push_back(kron_power(P, p));
          lhs.push_back(Pbar * sympow::tensor_power(v, p));
          rhs.push_back(sympow::tensor_power(Vec<S>(P * v), p));
        }
        return parts(lhs, rhs);
      })));
  out.push_back(
      claim("004.prop3.step1", step1, R"(\bar{P}^{T}\bar{P}=I_{d^{p}})",
            "for a rotation P and every pair of basis tensors: <v_I, v_J> = prod_k <v_ik, v_jk>, "
            "<P-bar v_I, P-bar v_J> = prod_k <P v_ik, P v_jk>, <P v_a, P v_b> = <v_a, v_b>, hence "
            "P-bar^T P-bar = I_{d^p} (p = 2, 3; the note's prod_{p=1}^p reuses p as its index and "
            "writes v_{j_k} for v_{j_p})",
            check_of([](auto &d) {
              using S = scalar_of<decltype(d)>;
              using Ix = Eigen::Index;
              const Ix n = static_cast<Ix>(d.sizes.K);
              const Mat<S> P = draw_rotation(d, n), I_d = Mat<S>::Identity(n, n);
              std::vector<Mat<S>> lhs{P.transpose() * P}, rhs{I_d}; // <P v_a, P v_b> = <v_a, v_b>
              for (const int p : {2, 3}) {
                const Mat<S> Pbar = pbar_on_basis(P, p), basis = pbar_on_basis(I_d, p);
                const Ix N = Pbar.rows();
                Mat<S> inner(N, N), product(N, N), inner_P(N, N), product_P(N, N);
                for (Ix I = 0; I < N; ++I)
                  for (Ix J = 0; J < N; ++J) {
                    const auto tI = tuple_of(I, n, p), tJ = tuple_of(J, n, p);
                    inner(I, J) = basis.col(I).dot(basis.col(J));
                    inner_P(I, J) = Pbar.col(I).dot(Pbar.col(J));
                    product(I, J) = product_P(I, J) = S(1);
                    for (std::size_t k = 0; k < tI.size(); ++k) {
                      product(I, J) *= I_d.col(tI[k]).dot(I_d.col(tJ[k]));
                      product_P(I, J) *= P.col(tI[k]).dot(P.col(tJ[k]));
                    }
                  }
                lhs.insert(lhs.end(), {inner, inner_P, Pbar.transpose() * Pbar});
                rhs.insert(rhs.end(), {product, product_P, Mat<S>::Identity(N, N)});
              }
              return parts(lhs, rhs);
            })));
  out.push_back(claim(
      "004.prop3.det_kronecker", step2, R"(\det(A\otimes B)=\det(A)^{\dim(B)}\det(B)^{\dim(A)})",
      "det(A (x) B) = det(A)^dim(B) det(B)^dim(A) for square A (d x d) and B (V x V), dim the "
      "order of the matrix",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const Mat<S> A = d.values(d.sizes.K, d.sizes.K), B = d.values(d.sizes.V, d.sizes.V);
        return Sides<S>{scalar(S(kron(A, B).determinant())),
                        scalar(S(det_power(A, B.rows()) * det_power(B, A.rows())))};
      })));
  const Sizes small{6, 2, 2, 3}; // P^(x)3 is 8 x 8
  out.push_back(sized(claim("004.prop3.det_pbar", step2, R"(\det(\bar{P})=\det(P)^{p\cdot d})",
                            "det(P-bar) = det(P)^{p d}, P-bar = P (x) ... (x) P (p factors), P "
                            "any d x d matrix as the tensor-product rule is used (p = 2, 3)",
                            det_pbar(true)),
                      small));
  out.push_back(sized(
      correcting(claim("004.prop3.det_pbar.corrected", step2, R"(\det(\bar{P})=\det(P)^{p\cdot d})",
                       "det(P (x) ... (x) P) = det(P)^{p d^{p-1}} (the rule applied p - 1 "
                       "times), and det(Sym^p(P)) = det(P)^{p D / d} for the D x D P-bar of "
                       "Proposition 3 (p = 2, 3)",
                       det_pbar(false)),
                 "004.prop3.det_pbar"),
      small));
  out.push_back(sized(
      claim(
          "004.prop3.det_one", step2, R"(\det(\bar{P})=1^{p\cdot d}=1)",
          "for a rotation P: det(P) = 1, det(P (x) ... (x) P) = 1 and det(Sym^p(P)) = 1 (p = 2, 3)",
          check_of([](auto &d) {
            using S = scalar_of<decltype(d)>;
            const Mat<S> P = draw_rotation(d, static_cast<Eigen::Index>(d.sizes.K));
            std::vector<Mat<S>> lhs{scalar(S(P.determinant()))}, rhs{scalar(S(1))};
            for (const int p : {2, 3}) {
              lhs.push_back(scalar(S(kron_power(P, p).determinant())));
              lhs.push_back(scalar(S(sympow::sym_power(P, p).determinant())));
              rhs.insert(rhs.end(), 2, scalar(S(1)));
            }
            return parts(lhs, rhs);
          })),
      small));
  return out;
}

// ---- A.2 Derivations, line by line ----

/// The rotated queries and keys of the reference, R(mu_i) Q_i and R(mu_j) K_j.
template <class S> std::pair<Mat<S>, Mat<S>> reference_turned(const SympowHead<S> &x) {
  const Mat<S> mu = sympow::cumulative_angles(x.beta, x.theta);
  return {sympow::rotate_rows(mu, x.q), sympow::rotate_rows(mu, x.k)};
}

/// C_i = sum_{k<=i} e^{G_i - G_k} (Q'_i^T K'_k)^p from the reference's rotated queries and
/// keys and cumulative log-gates (C_i of the proofs of Propositions 1 and 2), one per row.
template <class S> Mat<S> reference_C(const SympowHead<S> &x) {
  using std::exp;
  const auto turned_qk = reference_turned(x);
  const Mat<S> &qr = turned_qk.first, &kr = turned_qk.second;
  const Vec<S> G = sympow::log_gate_cumsum(x.g);
  return by_rows<S>(x.q.rows(), [&](Eigen::Index i) {
    S sum(0);
    for (Eigen::Index k = 0; k <= i; ++k)
      sum += S(exp(S(G(i) - G(k)))) * kernel(row(qr, i), row(kr, k), x.p);
    return Vec<S>::Constant(1, sum);
  });
}

/// The lines of the proof of Proposition 1, Y_i = ...: line n (0: Y_i = sum_j (Q_i^T
/// (R^{i-j})^T K_j)^p V_j / C_i; 2 to 7 as the note writes them after the line 004.prop1.proof
/// quotes) against the reference's Y.
Check prop1_line(int n) {
  return check_of([n](auto &d) {
    using S = scalar_of<decltype(d)>;
    using Ix = Eigen::Index;
    const SympowHead<S> x = draw_sympow(d, {.rotary = true});
    const Ix T = x.q.rows();
    const Mat<S> mu = note_angles(x);
    const Mat<S> qp = turned_by_powers(x.theta, x.q), kp = turned_by_powers(x.theta, x.k);
    const auto Rq = [&](Ix i) { return turned(mu, x.q, i); }; // R(mu_i) Q_i
    const auto Rk = [&](Ix j) { return turned(mu, x.k, j); };
    const auto phiq = [&](Ix i) { return phi(x, Rq(i)); };
    const auto phik = [&](Ix j) { return phi(x, Rk(j)); };
    const auto V = [&](Ix j) { return row(x.v, j); };
    const auto C = [&](Ix i) { // C_i = sum_k (Q'_i^T K'_k)^p
      S sum(0);
      for (Ix k = 0; k <= i; ++k)
        sum += kernel(row(qp, i), row(kp, k), x.p);
      return sum;
    };
    const auto line = [&](auto w) { return quotient_rows<S>(T, w, C); };
    const auto score = [&](Ix i, Ix j, const Mat<S> &m) { // (Q_i^T m K_j)^p V_j
      return Vec<S>(kernel(row(x.q, i), Vec<S>(m * row(x.k, j)), x.p) * V(j));
    };
    Mat<S> Y;
    switch (n) {
    case 0:
      Y = line([&](Ix i, Ix j) {
        return score(i, j, Mat<S>(rotary_power(x.theta, i - j).transpose()));
      });
      break;
    case 2:
      Y = line([&](Ix i, Ix j) { return score(i, j, R_at(mu, i).transpose() * R_at(mu, j)); });
      break;
    case 3: Y = line([&](Ix i, Ix j) { return Vec<S>(kernel(Rq(i), Rk(j), x.p) * V(j)); }); break;
    case 4: Y = line([&](Ix i, Ix j) { return Vec<S>(S(phiq(i).dot(phik(j))) * V(j)); }); break;
    case 5:
      Y = line([&](Ix i, Ix j) { return Vec<S>((V(j) * phik(j).transpose()) * phiq(i)); });
      break;
    case 6:
      Y = by_rows<S>(T, [&](Ix i) {
        Mat<S> sum = V(0) * phik(0).transpose();
        for (Ix j = 1; j <= i; ++j)
          sum += V(j) * phik(j).transpose();
        return Vec<S>(sum * phiq(i) / C(i));
      });
      break;
    default: {
      const Trace<S> ref = reference(x);
      Y = by_rows<S>(T, [&](Ix i) {
        return Vec<S>(ref.state[std::size_t(i)] * phiq(i) /
                      S((ref.normaliser[std::size_t(i)] * phiq(i))(0, 0)));
      });
    }
    }
    return Sides<S>{Y, sympow::recurrent_head(x).o};
  });
}

/// The facts the proof of Proposition 1 uses: line n of C_i = ... (0: C_i = sum_k
/// phi^p(Q'_i)^T phi^p(K'_k), 1: with R(mu_i), 2: the factors swapped, 3: Z_i phi^p(R(mu_i)
/// Q_i)) against the reference's C_i; n = 4: sum_j V_j phi^p(R(mu_j) K_j)^T = S_i.
Check prop1_fact(int n) {
  return check_of([n](auto &d) {
    using S = scalar_of<decltype(d)>;
    using Ix = Eigen::Index;
    const SympowHead<S> x = draw_sympow(d, {.rotary = true});
    const Ix T = x.q.rows();
    const Mat<S> mu = note_angles(x);
    const Mat<S> qp = turned_by_powers(x.theta, x.q), kp = turned_by_powers(x.theta, x.k);
    const auto phiq = [&](Ix i) { return phi(x, turned(mu, x.q, i)); };
    const auto phik = [&](Ix j) { return phi(x, turned(mu, x.k, j)); };
    const Trace<S> ref = reference(x);
    if (n == 4) {
      std::vector<Mat<S>> sums;
      for (Ix i = 0; i < T; ++i) {
        Mat<S> sum = row(x.v, 0) * phik(0).transpose();
        for (Ix j = 1; j <= i; ++j)
          sum += row(x.v, j) * phik(j).transpose();
        sums.push_back(sum);
      }
      return parts(sums, ref.state);
    }
    const Mat<S> C = by_rows<S>(T, [&](Ix i) {
      S sum(0);
      for (Ix k = 0; k <= i; ++k)
        sum += n == 0   ? S(phi(x, row(qp, i)).dot(phi(x, row(kp, k))))
               : n == 1 ? S(phiq(i).dot(phik(k)))
                        : S(phik(k).dot(phiq(i)));
      if (n == 3)
        sum = S((ref.normaliser[std::size_t(i)] * phiq(i))(0, 0));
      return Vec<S>::Constant(1, sum);
    });
    return Sides<S>{C, reference_C(x)};
  });
}

std::vector<Claim> proof_lines_of_proposition1() {
  const Source src{seed_004, "A.2 Derivations / Proof of Proposition 1", ""};
  const Sizes sizes = pairs;
  std::vector<Claim> out;
  const auto add = [&](const char *id, const char *quote, const char *statement, Check check) {
    out.push_back(sized(claim(id, src, quote, statement, std::move(check)), sizes));
  };
  // Y_i = sum_j (Q_i^T (R^{i-j})^T K_j)^p V_j / C_i
  add("004.prop1.proof.relative",
      R"(\displaystyle=\sum_{j=1}^{i}\frac{\left(Q_{i}^{T}(R^{i-j})^{T}K_{j}\right)^{p}% V_{j}}{C_{i}})",
      "Y_i = sum_j (Q_i^T (R^{i-j})^T K_j)^p V_j / C_i, C_i = sum_k (Q'_i^T K'_k)^p, "
      "R^{i-j} = R((i-j) theta): the reference's Y_i",
      prop1_line(0));
  // = sum_j (Q_i^T R(mu_i)^T R(mu_j) K_j)^p V_j / C_i
  add("004.prop1.proof.angles",
      R"(\displaystyle=\sum_{j=1}^{i}\frac{\left(Q_{i}^{T}R(\mu_{i})^{T}R(\mu_{j})K_{j}% \right)^{p}V_{j}}{C_{i}})",
      "= sum_j (Q_i^T R(mu_i)^T R(mu_j) K_j)^p V_j / C_i, mu_i = i theta: the reference's Y_i",
      prop1_line(2));
  // = sum_j ((R(mu_i) Q_i)^T R(mu_j) K_j)^p V_j / C_i
  add("004.prop1.proof.turned_query",
      R"(\displaystyle=\sum_{j=1}^{i}\frac{\left((R(\mu_{i})Q_{i})^{T}R(\mu_{j})K_{j}% \right)^{p}V_{j}}{C_{i}})",
      "= sum_j ((R(mu_i) Q_i)^T R(mu_j) K_j)^p V_j / C_i: the reference's Y_i", prop1_line(3));
  // = sum_j (phi^p(R(mu_i) Q_i)^T phi^p(R(mu_j) K_j)) V_j / C_i
  add("004.prop1.proof.embedded",
      R"(\displaystyle=\sum_{j=1}^{i}\frac{\left(\phi^{p}(R(\mu_{i})Q_{i})^{T}\phi^{p}(% R(\mu_{j})K_{j})\right)V_{j}}{C_{i}})",
      "= sum_j (phi^p(R(mu_i) Q_i)^T phi^p(R(mu_j) K_j)) V_j / C_i: the reference's Y_i",
      prop1_line(4));
  // = sum_j V_j phi^p(R(mu_j) K_j)^T phi^p(R(mu_i) Q_i) / C_i
  add("004.prop1.proof.reordered",
      R"(\displaystyle=\sum_{j=1}^{i}\frac{V_{j}\phi^{p}(R(\mu_{j})K_{j})^{T}\phi^{p}(R% (\mu_{i})Q_{i})}{C_{i}})",
      "= sum_j V_j phi^p(R(mu_j) K_j)^T phi^p(R(mu_i) Q_i) / C_i: the reference's Y_i",
      prop1_line(5));
  // = (sum_j V_j phi^p(R(mu_j) K_j)^T) phi^p(R(mu_i) Q_i) / C_i
  add("004.prop1.proof.factored",
      R"(\displaystyle=\frac{\left(\sum_{j=1}^{i}V_{j}\phi^{p}(R(\mu_{j})K_{j})^{T}% \right)\phi^{p}(R(\mu_{i})Q_{i})}{C_{i}})",
      "= (sum_j V_j phi^p(R(mu_j) K_j)^T) phi^p(R(mu_i) Q_i) / C_i: the reference's Y_i",
      prop1_line(6));
  // = S_i phi^p(R(mu_i) Q_i) / (Z_i phi^p(R(mu_i) Q_i))
  add("004.prop1.proof.recurrent",
      R"(\displaystyle=\frac{S_{i}\phi^{p}(R(\mu_{i})Q_{i})}{Z_{i}\phi^{p}(R(\mu_{i})Q_% {i})})",
      "= S_i phi^p(R(mu_i) Q_i) / (Z_i phi^p(R(mu_i) Q_i)) with the reference's S_i, Z_i: "
      "the reference's Y_i",
      prop1_line(7));
  // sum_j V_j phi^p(R(mu_j) K_j)^T = S_i
  add("004.prop1.proof.state", R"(\sum_{j=1}^{i}V_{j}\phi^{p}(R(\mu_{j})K_{j})^{T}=S_{i})",
      "sum_{j<=i} V_j phi^p(R(mu_j) K_j)^T = S_i, the reference's state", prop1_fact(4));
  // C_i = sum_k phi^p(Q'_i)^T phi^p(K'_k)
  add("004.prop1.proof.C_embedded",
      R"(\displaystyle=\sum_{k=1}^{i}\phi^{p}(Q_{i}^{\prime})^{T}\phi^{p}(K_{k}^{\prime}))",
      "C_i = sum_k phi^p(Q'_i)^T phi^p(K'_k), Q'_i = R^i Q_i: the reference's sum_k (Q'_i^T "
      "K'_k)^p",
      prop1_fact(0));
  // = sum_k phi^p(R(mu_i) Q_i)^T phi^p(R(mu_k) K_k)
  add("004.prop1.proof.C_angles",
      R"(\displaystyle=\sum_{k=1}^{i}\phi^{p}(R(\mu_{i})Q_{i})^{T}\phi^{p}(R(\mu_{k})K_% {k}))",
      "= sum_k phi^p(R(mu_i) Q_i)^T phi^p(R(mu_k) K_k): the reference's C_i", prop1_fact(1));
  // = sum_k phi^p(R(mu_k) K_k)^T phi^p(R(mu_i) Q_i)
  add("004.prop1.proof.C_swapped",
      R"(\displaystyle=\sum_{k=1}^{i}\phi^{p}(R(\mu_{k})K_{k})^{T}\phi^{p}(R(\mu_{i})Q_% {i}))",
      "= sum_k phi^p(R(mu_k) K_k)^T phi^p(R(mu_i) Q_i): the reference's C_i", prop1_fact(2));
  // = Z_i phi^p(R(mu_i) Q_i)
  add("004.prop1.proof.C_normaliser", R"(\displaystyle=Z_{i}\phi^{p}(R(\mu_{i})Q_{i}))",
      "= Z_i phi^p(R(mu_i) Q_i) with the reference's Z_i: the reference's C_i", prop1_fact(3));
  return out;
}

/// The lines of the proof of Proposition 2: line n of Y_i = ... (0: Y_i = sum_j b_ij (Q'_i^T
/// K'_j)^p V_j / C_i; 2 to 4 as the note writes them after the line 004.prop2.proof quotes)
/// against the reference's Y; of C_i = ... (5: b_ik phi^p(Q'_i)^T phi^p(K'_k), 6: the factors
/// swapped, 7: Z_i phi^p(Q'_i)) against the reference's C_i; of S_{k+1} = ... (8: gamma_{k+1}
/// S_k + V_{k+1} phi^p(K'_{k+1})^T, 9, 10 as written) against the reference's S_{k+1}.
Check prop2_line(int n) {
  return check_of([n](auto &d) {
    using S = scalar_of<decltype(d)>;
    using Ix = Eigen::Index;
    const SympowHead<S> x = draw_sympow(d, {.rotary = true, .gated = true});
    const Ix T = x.q.rows();
    const Mat<S> mu = note_angles(x);
    const auto phiq = [&](Ix i) { return phi(x, turned(mu, x.q, i)); }; // phi^p(Q'_i)
    const auto phik = [&](Ix j) { return phi(x, turned(mu, x.k, j)); };
    const auto V = [&](Ix j) { return row(x.v, j); };
    const auto C = [&](Ix i) { // C_i = sum_k b_ik (Q'_i^T K'_k)^p
      S sum(0);
      for (Ix k = 0; k <= i; ++k)
        sum += b(x, i, k) * kernel(turned(mu, x.q, i), turned(mu, x.k, k), x.p);
      return sum;
    };
    const auto line = [&](auto w) { return quotient_rows<S>(T, w, C); };
    if (n >= 8) { // S_{k+1}, the note's k + 1 = row k
      const Trace<S> ref = reference(x);
      const auto newest = [&](Ix k) { return Mat<S>(V(k) * phik(k).transpose()); };
      std::vector<Mat<S>> lhs, rhs;
      for (Ix k = 1; k < T; ++k) {
        lhs.push_back(n == 8   ? Mat<S>(gamma_at(x, k) * ref.state[std::size_t(k - 1)] + newest(k))
                      : n == 9 ? Mat<S>(gated_sum(x, phik, k, k - 1) + newest(k))
                               : gated_sum(x, phik, k, k));
        rhs.push_back(ref.state[std::size_t(k)]);
      }
      return parts(lhs, rhs);
    }
    if (n >= 5) {
      const Trace<S> ref = reference(x);
      const Mat<S> Cs = by_rows<S>(T, [&](Ix i) {
        S sum(0);
        for (Ix k = 0; k <= i; ++k)
          sum += b(x, i, k) * (n == 5 ? S(phiq(i).dot(phik(k))) : S(phik(k).dot(phiq(i))));
        if (n == 7)
          sum = S((ref.normaliser[std::size_t(i)] * phiq(i))(0, 0));
        return Vec<S>::Constant(1, sum);
      });
      return Sides<S>{Cs, reference_C(x)};
    }
    Mat<S> Y;
    switch (n) {
    case 0:
      Y = line([&](Ix i, Ix j) {
        return Vec<S>(b(x, i, j) * kernel(turned(mu, x.q, i), turned(mu, x.k, j), x.p) * V(j));
      });
      break;
    case 2:
      Y = line(
          [&](Ix i, Ix j) { return Vec<S>(b(x, i, j) * (V(j) * phik(j).transpose()) * phiq(i)); });
      break;
    case 3:
      Y = by_rows<S>(T, [&](Ix i) { return Vec<S>(gated_sum(x, phik, i, i) * phiq(i) / C(i)); });
      break;
    default: {
      const Trace<S> ref = reference(x);
      Y = by_rows<S>(T, [&](Ix i) {
        return Vec<S>(ref.state[std::size_t(i)] * phiq(i) /
                      S((ref.normaliser[std::size_t(i)] * phiq(i))(0, 0)));
      });
    }
    }
    return Sides<S>{Y, sympow::recurrent_head(x).o};
  });
}

std::vector<Claim> proof_lines_of_proposition2() {
  const Source src{seed_004, "A.2 Derivations / Proof of Proposition 2", ""};
  std::vector<Claim> out;
  const auto add = [&](const char *id, const char *quote, const char *statement, Check check) {
    out.push_back(sized(claim(id, src, quote, statement, std::move(check)), pairs));
  };
  // Y_i = sum_j b_ij (Q'_i^T K'_j)^p V_j / C_i
  add("004.prop2.proof.attention",
      R"(\displaystyle=\sum_{j=1}^{i}\frac{b_{ij}\left(Q_{i}^{\prime T}K^{\prime}_{j}% \right)^{p}V_{j}}{C_{i}})",
      "Y_i = sum_j b_ij (Q'_i^T K'_j)^p V_j / C_i, C_i = sum_k b_ik (Q'_i^T K'_k)^p: the "
      "reference's gated rotary Y_i",
      prop2_line(0));
  // = sum_j b_ij V_j phi^p(K'_j)^T phi^p(Q'_i) / C_i
  add("004.prop2.proof.reordered",
      R"(\displaystyle=\sum_{j=1}^{i}\frac{b_{ij}V_{j}\phi^{p}(K^{\prime}_{j})^{T}\phi^% {p}(Q^{\prime}_{i})}{C_{i}})",
      "= sum_j b_ij V_j phi^p(K'_j)^T phi^p(Q'_i) / C_i: the reference's Y_i", prop2_line(2));
  // = (sum_j b_ij V_j phi^p(K'_j)^T) phi^p(Q'_i) / C_i
  add("004.prop2.proof.factored",
      R"(\displaystyle=\frac{\left(\sum_{j=1}^{i}b_{ij}V_{j}\phi^{p}(K^{\prime}_{j})^{T% }\right)\phi^{p}(Q^{\prime}_{i})}{C_{i}})",
      "= (sum_j b_ij V_j phi^p(K'_j)^T) phi^p(Q'_i) / C_i: the reference's Y_i", prop2_line(3));
  // = S_i phi^p(Q'_i) / (Z_i phi^p(Q'_i))
  add("004.prop2.proof.recurrent",
      R"(\displaystyle=\frac{S_{i}\phi^{p}(Q^{\prime}_{i})}{Z_{i}\phi^{p}(Q^{\prime}_{i% })})",
      "= S_i phi^p(Q'_i) / (Z_i phi^p(Q'_i)) with the reference's S_i, Z_i: the reference's Y_i",
      prop2_line(4));
  // C_i = sum_k b_ik phi^p(Q'_i)^T phi^p(K'_k)
  add("004.prop2.proof.C_embedded",
      R"(\displaystyle=\sum_{k=1}^{i}b_{ik}\phi^{p}(Q_{i}^{\prime})^{T}\phi^{p}(K_{k}^{% \prime}))",
      "C_i = sum_k b_ik phi^p(Q'_i)^T phi^p(K'_k): the reference's sum_k e^{G_i - G_k} "
      "(Q'_i^T K'_k)^p",
      prop2_line(5));
  // = sum_k b_ik phi^p(K'_k)^T phi^p(Q'_i)
  add("004.prop2.proof.C_swapped",
      R"(\displaystyle=\sum_{k=1}^{i}b_{ik}\phi^{p}(K_{k}^{\prime})^{T}\phi^{p}(Q_{i}^{% \prime}))",
      "= sum_k b_ik phi^p(K'_k)^T phi^p(Q'_i): the reference's C_i", prop2_line(6));
  // = Z_i phi^p(Q'_i)
  add("004.prop2.proof.C_normaliser", R"(\displaystyle=Z_{i}\phi^{p}(Q^{\prime}_{i}))",
      "= Z_i phi^p(Q'_i) with the reference's Z_i: the reference's C_i", prop2_line(7));
  // S_{k+1} = gamma_{k+1} S_k + V_{k+1} phi^p(K'_{k+1})^T
  add("004.prop2.induction.recurrence",
      R"(\displaystyle=\gamma_{k+1}S_{k}+V_{k+1}\phi^{p}(K^{\prime}_{k+1})^{T})",
      "S_{k+1} = gamma_{k+1} S_k + V_{k+1} phi^p(K'_{k+1})^T with the reference's S_k: the "
      "reference's S_{k+1}, every k >= 1",
      prop2_line(8));
  // = (sum_{j<=k} b_(k+1)j V_j phi^p(K'_j)^T) + V_{k+1} phi^p(K'_{k+1})^T
  add("004.prop2.induction.merged",
      R"(\displaystyle=\left(\sum_{j=1}^{k}b_{(k+1)j}V_{j}\phi^{p}(K^{\prime}_{j})^{T}% \right)+V_{k+1}\phi^{p}(K^{\prime}_{k+1})^{T})",
      "= (sum_{j<=k} b_(k+1)j V_j phi^p(K'_j)^T) + V_{k+1} phi^p(K'_{k+1})^T: the reference's "
      "S_{k+1}",
      prop2_line(9));
  // = sum_{j<=k+1} b_(k+1)j V_j phi^p(K'_j)^T
  add("004.prop2.induction.sum",
      R"(\displaystyle=\sum_{j=1}^{k+1}b_{(k+1)j}V_{j}\phi^{p}(K^{\prime}_{j})^{T})",
      "= sum_{j<=k+1} b_(k+1)j V_j phi^p(K'_j)^T: the reference's S_{k+1}", prop2_line(10));
  return out;
}

/// The matrix the note writes for R(theta): 2 x 2 blocks (cos, -sin; sin, cos) of the
/// angles on the diagonal, zeros elsewhere.
template <class S> Mat<S> written_rotary(const Vec<S> &theta) {
  using std::cos;
  using std::sin;
  Mat<S> R = Mat<S>::Zero(2 * theta.size(), 2 * theta.size());
  for (Eigen::Index c = 0; c < theta.size(); ++c)
    R.block(2 * c, 2 * c, 2, 2) << S(cos(theta(c))), S(-sin(theta(c))), S(sin(theta(c))),
        S(cos(theta(c)));
  return R;
}

/// The block-diagonal matrix with block(c) on its diagonal, c = 0 .. n - 1.
template <class S, class F> Mat<S> block_diagonal(Eigen::Index n, F block) {
  Mat<S> out = Mat<S>::Zero(2 * n, 2 * n);
  for (Eigen::Index c = 0; c < n; ++c)
    out.block(2 * c, 2 * c, 2, 2) = block(c);
  return out;
}

/// R(theta_c), the 2 x 2 rotation of one angle.
template <class S> Mat<S> rotation_2x2(const S &theta) {
  return sympow::rotary_matrix(Vec<S>(Vec<S>::Constant(1, theta)));
}

/// The lines of the proof of R(theta)^k = R(k theta), for every angle theta_i drawn and
/// k = 1..T: 0: R(theta_i)^1 = R(theta_i); 1: R(theta_i)^k = R(k theta_i); 2: R(theta_i)^{k+1}
/// = R(theta_i) R(theta_i)^k; 3: = R(theta_i) R(k theta_i); then the block-diagonal R(theta):
/// 4: R(theta) = diag(R(theta_1), ..., R(theta_{d/2})); 5: R(theta)^k = diag(R(theta_c)^k);
/// 6: = diag(R(k theta_c)); 7: the matrix written in the statement is R(theta) and its k-th
/// power is the one written at k theta. R(theta) is the reference's rotary matrix.
Check rotation_line(int n) {
  return check_of([n](auto &d) {
    using S = scalar_of<decltype(d)>;
    using Ix = Eigen::Index;
    const Vec<S> theta = draw_angles(d);
    const Mat<S> R = sympow::rotary_matrix(theta);
    const auto at = [&](Ix k) { return Vec<S>(S(int(k)) * theta); };
    std::vector<Mat<S>> lhs, rhs;
    if (n == 4 || n == 7) {
      lhs.push_back(
          n == 4 ? block_diagonal<S>(theta.size(), [&](Ix c) { return rotation_2x2(theta(c)); })
                 : written_rotary(theta));
      rhs.push_back(R);
    }
    for (Ix k = 1; k <= Ix(d.sizes.T); ++k) {
      if (n <= 3)
        for (Ix c = 0; c < theta.size(); ++c) {
          const Mat<S> Rc = rotation_2x2(theta(c));
          const Mat<S> left = matrix_power(Rc, n == 0 ? 1 : n == 1 ? k : k + 1);
          lhs.push_back(n == 0   ? Rc
                        : n == 1 ? rotation_2x2(S(S(int(k)) * theta(c)))
                        : n == 2 ? Mat<S>(Rc * matrix_power(Rc, k))
                                 : Mat<S>(Rc * rotation_2x2(S(S(int(k)) * theta(c)))));
          rhs.push_back(left);
        }
      else if (n == 5 || n == 6) {
        lhs.push_back(block_diagonal<S>(theta.size(), [&](Ix c) {
          const Mat<S> Rc = rotation_2x2(theta(c));
          return n == 5 ? matrix_power(Rc, k) : rotation_2x2(S(S(int(k)) * theta(c)));
        }));
        rhs.push_back(matrix_power(R, k));
      } else if (n == 7) {
        lhs.push_back(matrix_power(written_rotary(theta), k));
        rhs.push_back(written_rotary(at(k)));
      }
    }
    return sides_of(lhs, rhs);
  });
}

std::vector<Claim> proof_lines_of_rotation_power() {
  const Source proposition{seed_004, "A.2 Derivations / Proposition", ""};
  const Source src{seed_004, "A.2 Derivations / Proof", ""};
  std::vector<Claim> out;
  // R(theta) = (cos(theta_1) -sin(theta_1) ...) satisfies R(theta)^k = R(k theta)
  out.push_back(claim("004.rotation.statement", proposition,
                      "Given a vector of angles θ=(θ1,θ2,,θd2\\theta=(\\theta_{1},\\theta_{2}",
                      "for theta = (theta_1, ..., theta_{d/2}) the matrix written, blocks (cos, "
                      "-sin; sin, cos), is the reference's R(theta), and its k-th power is the "
                      "matrix written at k theta, k = 1..T",
                      rotation_line(7)));
  // R(theta_i)^1 = R(theta_i)
  out.push_back(claim("004.rotation.base_case", src, R"(R(\theta_{i})^{1}=R(\theta_{i}),)",
                      "R(theta_i)^1 = R(theta_i) for each 2 x 2 block", rotation_line(0)));
  // R(theta_i)^k = R(k theta_i)
  out.push_back(claim("004.rotation.hypothesis", src, R"(R(\theta_{i})^{k}=R(k\theta_{i}).)",
                      "R(theta_i)^k = R(k theta_i) for each 2 x 2 block, k = 1..T",
                      rotation_line(1)));
  // R(theta_i)^{k+1} = R(theta_i) R(theta_i)^k
  out.push_back(claim("004.rotation.power_split", src,
                      R"(R(\theta_{i})^{k+1}=R(\theta_{i})R(\theta_{i})^{k}.)",
                      "R(theta_i)^{k+1} = R(theta_i) R(theta_i)^k, k = 1..T", rotation_line(2)));
  // R(theta_i)^{k+1} = R(theta_i) R(k theta_i)
  out.push_back(claim("004.rotation.substituted", src,
                      R"(R(\theta_{i})^{k+1}=R(\theta_{i})R(k\theta_{i}).)",
                      "R(theta_i)^{k+1} = R(theta_i) R(k theta_i), k = 1..T", rotation_line(3)));
  // R(theta) = diag(R(theta_1), ..., R(theta_{d/2}))
  out.push_back(claim("004.rotation.blocks", src,
                      R"(R(\theta)=\begin{pmatrix}R(\theta_{1})&0&\cdots&0\\)",
                      "R(theta) = diag(R(theta_1), R(theta_2), ..., R(theta_{d/2})), the "
                      "reference's rotary matrix",
                      rotation_line(4)));
  // R(theta)^k = diag(R(theta_1)^k, ..., R(theta_{d/2})^k)
  out.push_back(claim("004.rotation.blocks_power", src,
                      R"(R(\theta)^{k}=\begin{pmatrix}R(\theta_{1})^{k}&0&\cdots&0\\)",
                      "R(theta)^k = diag(R(theta_1)^k, ..., R(theta_{d/2})^k), k = 1..T",
                      rotation_line(5)));
  // R(theta)^k = diag(R(k theta_1), ..., R(k theta_{d/2}))
  out.push_back(claim("004.rotation.blocks_rotated", src,
                      R"(R(\theta)^{k}=\begin{pmatrix}R(k\theta_{1})&0&\cdots&0\\)",
                      "R(theta)^k = diag(R(k theta_1), ..., R(k theta_{d/2})), k = 1..T",
                      rotation_line(6)));
  return out;
}

/// Step 1 of the proof of Proposition 3 for a rotation P and every pair of basis tensors
/// v_I, v_J (p = 2, 3): n = 0: P-bar on the basis is P (x) ... (x) P; 1: <v_I, v_J> =
/// prod_k <v_ik, v_jk>; 2: <P-bar v_I, P-bar v_J> = prod_k <P v_ik, P v_jk>.
Check basis_inner(int n) {
  return check_of([n](auto &d) {
    using S = scalar_of<decltype(d)>;
    using Ix = Eigen::Index;
    const Ix dim = static_cast<Ix>(d.sizes.K);
    const Mat<S> P = draw_rotation(d, dim), I_d = Mat<S>::Identity(dim, dim);
    std::vector<Mat<S>> lhs, rhs;
    for (const int p : {2, 3}) {
      const Mat<S> Pbar = pbar_on_basis(P, p);
      if (n == 0) {
        lhs.push_back(Pbar), rhs.push_back(kron_power(P, p));
        continue;
      }
      const Mat<S> &M = n == 1 ? I_d : P;
      const Mat<S> images = n == 1 ? pbar_on_basis(I_d, p) : Pbar;
      const Ix N = images.cols();
      Mat<S> inner(N, N), product(N, N);
      for (Ix I = 0; I < N; ++I)
        for (Ix J = 0; J < N; ++J) {
          const auto tI = tuple_of(I, dim, p), tJ = tuple_of(J, dim, p);
          inner(I, J) = images.col(I).dot(images.col(J));
          product(I, J) = S(1);
          for (std::size_t k = 0; k < tI.size(); ++k)
            product(I, J) *= M.col(tI[k]).dot(M.col(tJ[k]));
        }
      lhs.push_back(inner), rhs.push_back(product);
    }
    return parts(lhs, rhs);
  });
}

/// The softmax attention form with B_ij = exp(Q_i^T K_j + m (j - i)) (m = 0: (softmax))
/// against the reference's softmax attention with an ALiBi slope m; `gated`: B_ij =
/// gamma^{i-j} exp(Q_i^T K_j), gamma = exp(-m), instead.
Check softmax_scores(int m_eighths, bool gated) {
  return check_of([=]<class S>(Draw<S> &d) -> Sides<S> {
    if constexpr (std::is_same_v<S, Exact>)
      throw NotExact("exp of a drawn score is not rational");
    else {
      using std::exp;
      const Mat<S> Q = d.values(d.sizes.T, d.sizes.K), K = d.values(d.sizes.T, d.sizes.K),
                   V = d.values(d.sizes.T, d.sizes.V);
      const S m = S(m_eighths) / S(8), gamma = exp(S(-m));
      const Mat<S> Y = attention(V, [&](Eigen::Index i, Eigen::Index j) {
        const S score = Q.row(i).dot(K.row(j));
        if (!gated)
          return S(exp(S(score + m * S(int(j - i)))));
        S gamma_power(1); // gamma^(i - j)
        for (Eigen::Index n = 0; n < i - j; ++n)
          gamma_power *= gamma;
        return S(gamma_power * exp(score));
      });
      Head<S> h;
      h.q = Q, h.k = K, h.v = V, h.g = Mat<S>(Q.rows(), 0);
      softmax_attn::Encoding enc;
      enc.alibi_slope = m_eighths / 8.0;
      return Sides<S>{Y, softmax_attn::parallel_head(h, S(1), enc).o};
    }
  });
}

std::vector<Claim> remaining_rows() {
  std::vector<Claim> out;
  // Q'_i = R^i Q_i, K'_j = R^j K_j
  out.push_back(sized(
      claim("004.rotary.definition",
            {seed_004, "2.2 Compatibility of Rotary Embeddings with Sympow", ""},
            R"(Q^{\prime}_{i}=R^{i}Q_{i}\qquad K^{\prime}_{j}=R^{j}K_{j})",
            "Q'_i = R^i Q_i and K'_j = R^j K_j, R = R(theta): the reference's rotated queries "
            "and keys (angles mu_i = i theta)",
            check_of([](auto &d) {
              using S = scalar_of<decltype(d)>;
              const SympowHead<S> x = draw_sympow(d, {.rotary = true});
              const auto ref = reference_turned(x);
              return parts<S>({turned_by_powers(x.theta, x.q), turned_by_powers(x.theta, x.k)},
                              {ref.first, ref.second});
            })),
      pairs));
  // R(theta) = (cos(theta_1) -sin(theta_1) ...; sin(theta_1) cos(theta_1) ...; ...)
  out.push_back(
      sized(claim("004.rotary.matrix",
                  {seed_004, "2.2 Compatibility of Rotary Embeddings with Sympow", ""},
                  R"(R(\theta)=\begin{pmatrix}\cos(\theta_{1})&-\sin(\theta_{1})&\cdots&0&0\\)",
                  "the matrix written, 2 x 2 blocks (cos theta_c, -sin theta_c; sin theta_c, cos "
                  "theta_c) on the diagonal, is the reference's R(theta)",
                  check_of([](auto &d) {
                    using S = scalar_of<decltype(d)>;
                    const Vec<S> theta = draw_angles(d);
                    return Sides<S>{written_rotary(theta), sympow::rotary_matrix(theta)};
                  })),
            pairs));
  // The same matrix, restated verbatim in A.2's Proposition (the quote's second place).
  {
    Claim restated = sized(
        claim("004.rotation.matrix_restated", {seed_004, "A.2 Derivations / Proposition", ""},
              R"(R(\theta)=\begin{pmatrix}\cos(\theta_{1})&-\sin(\theta_{1})&\cdots&0&0\\)",
              "the matrix the Proposition is stated for, 2 x 2 blocks (cos theta_c, -sin "
              "theta_c; sin theta_c, cos theta_c) on the diagonal, is the reference's R(theta)",
              check_of([](auto &d) {
                using S = scalar_of<decltype(d)>;
                const Vec<S> theta = draw_angles(d);
                return Sides<S>{written_rotary(theta), sympow::rotary_matrix(theta)};
              })),
        pairs);
    restated.occurrence = 2;
    out.push_back(restated);
  }
  // Y_i = S_i phi^p(R(mu_i) Q_i) / (Z_i phi^p(R(mu_i) Q_i))
  out.push_back(sized(
      claim("004.rotary.output",
            {seed_004, "2.2 Compatibility of Rotary Embeddings with Sympow", ""},
            R"(Y_{i}=\frac{S_{i}\phi^{p}(R(\mu_{i})Q_{i})}{Z_{i}\phi^{p}(R(\mu_{i})Q_{i})})",
            "Y_i = S_i phi^p(R(mu_i) Q_i) / (Z_i phi^p(R(mu_i) Q_i)) with the reference's S_i, "
            "Z_i (mu_i = i theta): the reference's output",
            prop1_line(7)),
      pairs));
  // B_ij = b_ij (Q'_i^T K'_j)^p (sympow+gating)
  out.push_back(sized(
      claim("004.gating.scores", {seed_004, "3.1 Data Dependent Gating", "(sympow+gating)"},
            R"(\;({Q^{\prime}_{i}}^{T}K^{\prime}_{j})^{p}\qquad\text{(sympow+% gating)})",
            "B_ij = b_ij (Q'_i^T K'_j)^p, b_ij = prod_{k=j+1}^i gamma_k, in the attention form: "
            "the reference's gated rotary output",
            check_of([](auto &d) {
              using S = scalar_of<decltype(d)>;
              const SympowHead<S> x = draw_sympow(d, {.rotary = true, .gated = true});
              return Sides<S>{gated_attention(x), sympow::recurrent_head(x).o};
            })),
      pairs));
  // mu_i = mu_{i-1} + beta_i theta
  out.push_back(sized(
      claim(
          "004.rates.angles", {seed_004, "3.2 Data Dependent Rotations", ""},
          R"(\mu_{i}=\mu_{i-1}+\beta_{i}\theta\quad\text{ where }\quad\beta_{i}=1+\text{% tanh}(W_{\beta}X_{i}))",
          "mu_i = mu_{i-1} + beta_i theta from mu_0 = 0 (beta_i drawn in (0, 2]): the "
          "reference's cumulative angles",
          check_of([](auto &d) {
            using S = scalar_of<decltype(d)>;
            const SympowHead<S> x = draw_sympow(d, {.rotary = true, .learned_rates = true});
            return Sides<S>{note_angles(x), sympow::cumulative_angles(x.beta, x.theta)};
          })),
      pairs));
  const Source alibi_src{seed_004, "A.1 Equivalence between Gating and ALiBi", ""};
  // A_ij = B_ij / sum_k B_ik, B_ij = exp(Q_i^T K_j) (softmax)
  out.push_back(claim("004.alibi.softmax", alibi_src,
                      R"(B_{ij}=\text{exp}(Q_{i}^{T}K_% {j})\qquad\text{(softmax)})",
                      "Y_i = sum_j A_ij V_j, A_ij = B_ij / sum_k B_ik, B_ij = exp(Q_i^T K_j): the "
                      "reference's softmax attention (scale 1)",
                      softmax_scores(0, false)));
  // B_ij = exp(Q_i^T K_j + m (j - i)) (softmax + ALiBi)
  out.push_back(claim("004.alibi.scores", alibi_src,
                      R"(B_{ij}=\text{exp}(Q_{i}^{T}K_{j}+m(j-i))\qquad\text{(softmax + ALiBi)})",
                      "B_ij = exp(Q_i^T K_j + m (j - i)), m = 3/8: the reference's softmax "
                      "attention with ALiBi slope m",
                      softmax_scores(3, false)));
  out.push_back(claim("004.alibi.scores_gated", alibi_src,
                      R"(B_{ij}=\text{exp}(Q_{i}^{T}K_{j}+m(j-i))\qquad\text{(softmax + ALiBi)})",
                      "the attention form with B_ij = gamma^{i-j} exp(Q_i^T K_j), gamma = exp(-m), "
                      "m = 3/8 (scalar gating): the reference's softmax attention with ALiBi "
                      "slope m",
                      softmax_scores(3, true)));
  const Source step1{seed_004, "A.2 Derivations / Proof of Proposition 3 / Step 1", ""};
  // P-bar(v_i1 (x) ... (x) v_ip) = (P v_i1) (x) ... (x) (P v_ip)
  out.push_back(claim("004.prop3.step1.pbar_on_basis", step1,
                      R"(\otimes(Pv_{i_{2}})\otimes\dots\otimes(Pv_{i_{p}}),)",
                      "P-bar defined on basis tensors, P a rotation: P (x) ... (x) P (p = 2, 3)",
                      basis_inner(0)));
  // <v_i1 (x) ... (x) v_ip, v_j1 (x) ... (x) v_jk> = prod <v_ip, v_jp>
  out.push_back(
      claim("004.prop3.step1.inner_basis", step1,
            R"(\otimes v_{j_{k}}\rangle=\prod_{p=1}^{p}\langle v% _{i_{p}},v_{j_{p}}\rangle.)",
            "<v_I, v_J> = prod_k <v_ik, v_jk> for basis tensors (p = 2, 3; read with "
            "v_{j_k} as v_{j_p} and the product over the factors)",
            basis_inner(1)));
  // <P-bar v_I, P-bar v_J> = prod <P v_ip, P v_jp>
  out.push_back(claim("004.prop3.step1.inner_pbar", step1,
                      R"(\rangle=\prod_{p=1}^{p}\langle Pv_{i_{p}},Pv_{j_% {p}}\rangle.)",
                      "<P-bar v_I, P-bar v_J> = prod_k <P v_ik, P v_jk> for basis tensors, P a "
                      "rotation (p = 2, 3)",
                      basis_inner(2)));
  return out;
}

} // namespace

// ---- Figures stated in words: state sizes, parameter overhead ----

/// The shape of the model the experiments use, "similar to the 124M-parameter GPT-2
/// architecture": GPT-2 small's 12 layers of 12 heads, width 768 (heads of d = 64), and its
/// 124,439,808 parameters (Radford et al. 2019, the released checkpoint).
constexpr std::uint64_t gpt2_layers = 12, gpt2_heads = 12, gpt2_width = 768, gpt2_head_dim = 64;
constexpr std::uint64_t gpt2_parameters = 124439808;

/// The recurrent state of every head of every layer, in bytes: S (d x D) and, if
/// `with_Z`, Z (1 x D), D = C(d + p - 1, p), `bytes` a number.
std::uint64_t state_bytes(int p, bool with_Z, std::uint64_t bytes) {
  const auto D = static_cast<std::uint64_t>(sympow::embedding_dim(gpt2_head_dim, p));
  return gpt2_layers * gpt2_heads * (gpt2_head_dim + (with_Z ? 1 : 0)) * D * bytes;
}

/// x rounded to the nearest integer, as the engine's scalar.
template <class S> S rounded(long double x) { return S(static_cast<int>(std::llround(x))); }

std::vector<Claim> figures() {
  std::vector<Claim> out;
  {
    const std::string statement =
        "the recurrent state of all 12 x 12 heads (d = 64) is 39 MB at p = 2 and 14 GB at p = "
        "4, to the units written: 12 x 12 x (d + 1) x D numbers, D = C(d + p - 1, p)";
    Claim c = claim("004.state_sizes",
                    {seed_004, "4.1 Are Sympow Transformers Robust to Context Scaling?", ""},
                    R"(results in a smaller recurrent state size (39393939 MB) than when using)",
                    statement + "; which state and which number format are not said");
    struct Reading_ {
      const char *name;
      bool with_Z;
      std::uint64_t bytes;
    };
    for (const Reading_ r : {Reading_{"S and Z, 2 bytes a number (bf16)", true, 2},
                             Reading_{"S alone, 2 bytes a number (bf16)", false, 2},
                             Reading_{"S and Z, 4 bytes a number (fp32)", true, 4}})
      c.readings.push_back({r.name,
                            std::string("12 x 12 x ") + (r.with_Z ? "(d + 1)" : "d") +
                                " x D numbers of " + std::to_string(r.bytes) +
                                " bytes: 39 MB at p = 2, 14 GB at p = 4",
                            check_of([r](auto &d) {
                              using S = scalar_of<decltype(d)>;
                              Mat<S> sizes(1, 2), written(1, 2);
                              sizes << rounded<S>(state_bytes(2, r.with_Z, r.bytes) / 1e6L),
                                  rounded<S>(state_bytes(4, r.with_Z, r.bytes) / 1e9L);
                              written << S(39), S(14);
                              return Sides<S>{sizes, written};
                            })});
    out.push_back(c);
  }
  out.push_back(claim(
      "004.parameter_overhead",
      {seed_004, "A.4 Compute Overhead of Data-Dependent Gating and Data-Dependent Rotary", ""},
      R"(Adding data-dependent gating increases the total parameter count by 0.09%)",
      "one W_gamma in R^768 a head (12 x 12 heads) is 0.09% of GPT-2 small's 124,439,808 "
      "parameters, and W_gamma with W_beta 0.18%, to the hundredth of a percent written",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const long double added = gpt2_layers * gpt2_heads * gpt2_width; // one vector a head
        Mat<S> percent(1, 2), written(1, 2);
        percent << rounded<S>(1e4L * added / gpt2_parameters),
            rounded<S>(1e4L * 2 * added / gpt2_parameters); // in hundredths of a percent
        written << S(9), S(18);
        return Sides<S>{percent, written};
      })));
  return out;
}

std::vector<Claim> seed_004_claims() {
  std::vector<Claim> out;
  for (auto section :
       {background, rotary, conformal, gating, learned_rates, conformal_sympow, alibi, rotations,
        proof_of_proposition1, proof_of_proposition2, proof_of_proposition3,
        proof_lines_of_proposition1, proof_lines_of_proposition2, proof_lines_of_rotation_power,
        remaining_rows, figures})
    for (Claim &c : section())
      out.push_back(std::move(c));
  return out;
}

} // namespace ruleproof::proofs::notes
