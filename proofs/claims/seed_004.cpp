// ruleproof: the claims of seed 004 (symmetric power transformers). The truth is the
// reference: sympow's rotary matrix R(theta).
#include "claims.hpp"
#include "common.hpp"
#include "reference/sympow/rotation.hpp"

namespace ruleproof::proofs::notes {
namespace {

/// d/2 drawn angles theta_c (exact: rational cos and sin).
template <class S> Vec<S> draw_angles(Draw<S> &d) {
  Vec<S> theta(static_cast<Eigen::Index>(d.sizes.K));
  for (Eigen::Index c = 0; c < theta.size(); ++c)
    theta(c) = d.angle();
  return theta;
}

std::vector<Claim> rotations() {
  const Source proposition{seed_004, "A.2 Derivations / Proposition", ""};
  std::vector<Claim> out;
  out.push_back(
      claim("004.rotation.power", proposition, R"(R(\theta)^{k}=R(k\theta))",
            "R(theta)^k = R(k theta) for every positive integer k (block-diagonal rotary R)",
            check_of([](auto &d) {
              using S = typename std::decay_t<decltype(d)>::Scalar;
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
        using S = typename std::decay_t<decltype(d)>::Scalar;
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

std::vector<Claim> alibi() {
  const Source src{seed_004, "A.1 Equivalence between Gating and ALiBi", ""};
  std::vector<Claim> out;
  out.push_back(
      claim("004.alibi.bias_is_gate", src,
            R"(\text{exp}(Q_{i}^{T}K_{j}+m(j-i))=\gamma^{(i-j)}\text{exp}(Q_{i}^{T}K_{j}))",
            "exp(Q_i^T K_j + m (j - i)) = gamma^(i - j) exp(Q_i^T K_j), gamma = exp(-m), j <= i",
            check_of([](auto &d) {
              using S = typename std::decay_t<decltype(d)>::Scalar;
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
                        using S = typename std::decay_t<decltype(d)>::Scalar;
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

} // namespace

std::vector<Claim> seed_004_claims() {
  std::vector<Claim> out = rotations();
  for (Claim &c : alibi())
    out.push_back(std::move(c));
  return out;
}

} // namespace ruleproof::proofs::notes
