// ruleproof: the claims of seed 000 (operator derivation for the gated Oja rule: RoPE and
// VO-RoPE as products of rotations, Gated DeltaNet and gated Oja as position encodings, the
// gated Oja rule's WY representation, UT transform, vector and matrix forms). The truth is
// the reference: kda's and gated_oja's recurrent forms. The note writes the state in the
// [V, K] layout (S_t = (I - beta v v^T) Diag(alpha) S_{t-1} + beta v k^T, o_t = S_t q_t), the
// transpose of the reference's; the note's S below is the reference's state transposed.
#include "claims.hpp"
#include "common.hpp"
#include "reference/gated_oja/recurrent.hpp"
#include "reference/gla/chunk.hpp"
#include "reference/kda/recurrent.hpp"
#include "reference/sympow/rotation.hpp"

namespace ruleproof::proofs::notes {
namespace {

// --- Rotations (section 1) -------------------------------------------------------------

/// K drawn angles theta_k, one per pair of dimensions (exact: rational cos and sin).
template <class S> Vec<S> draw_pair_angles(Draw<S> &d, std::size_t pairs) {
  Vec<S> theta(static_cast<Eigen::Index>(pairs));
  for (Eigen::Index c = 0; c < theta.size(); ++c)
    theta(c) = d.angle();
  return theta;
}

/// The note's R_j: the block-diagonal rotation by j theta_k in pair k.
template <class S> Mat<S> R_at(const Vec<S> &theta, long j) {
  return sympow::rotary_matrix(Vec<S>(S(int(j)) * theta));
}

/// prod_{s=from}^{to} R_s, left to right as written (identity when from > to).
template <class S> Mat<S> product_of_R(const Vec<S> &theta, long from, long to) {
  Mat<S> P = Mat<S>::Identity(2 * theta.size(), 2 * theta.size());
  for (long s = from; s <= to; ++s)
    P = (P * R_at(theta, s)).eval();
  return P;
}

/// One head for the rotation claims: q, k of 2K features, v of 2V (pairs to rotate).
template <class S> struct RotaryDraw {
  Mat<S> q, k, v;
  Vec<S> theta;
};

template <class S> RotaryDraw<S> draw_rotary(Draw<S> &d) {
  const std::size_t T = d.sizes.T, K = d.sizes.K, V = d.sizes.V;
  RotaryDraw<S> r{d.values(T, 2 * K), d.values(T, 2 * K), d.values(T, 2 * V), {}};
  r.theta = draw_pair_angles(d, K);
  return r;
}

/// (R_j k_j)^T (R_t q_t), rows j and t (0-based) of the draw: RoPE's score.
template <class S> S rope_score(const RotaryDraw<S> &x, Eigen::Index j, Eigen::Index t) {
  return (R_at(x.theta, j + 1) * x.k.row(j).transpose())
      .dot(R_at(x.theta, t + 1) * x.q.row(t).transpose());
}

/// sum_{j<=t} v_j exp(score(j, t)) for every t, rows o_t.
template <class S, class Score> Mat<S> exp_weighted_values(const Mat<S> &v, Score score) {
  using std::exp;
  Mat<S> o = Mat<S>::Zero(v.rows(), v.cols());
  for (Eigen::Index t = 0; t < v.rows(); ++t)
    for (Eigen::Index j = 0; j <= t; ++j)
      o.row(t) += exp(S(score(j, t))) * v.row(j);
  return o;
}

std::vector<Claim> rotations() {
  const Source src{seed_000, "1 QKVO Rotary Position Embedding", ""};
  std::vector<Claim> out;
  // (1): the product runs over s = i+1..t while the sum runs over j; i is read as j.
  out.push_back(claim(
      "000.rope.eq1", {seed_000, src.section, "(1)"},
      R"(\mathbf{v}_j \exp \left( \mathbf{k}_j^\top \left( \prod_{s=i+1}^t \mathbf{R}_s \right) \mathbf{q}_t \right) \quad (1))",
      "sum_j v_j exp((R_j k_j)^T (R_t q_t)) = sum_j v_j exp(k_j^T (prod_{s=j+1}^t R_s) q_t), R_s "
      "the rotation by s theta as the note defines it (i read as j)",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const RotaryDraw<S> x = draw_rotary(d);
        const auto rotated = [&](Eigen::Index j, Eigen::Index t) { return rope_score(x, j, t); };
        const auto product = [&](Eigen::Index j, Eigen::Index t) {
          return S(x.k.row(j).dot(product_of_R(x.theta, j + 2, t + 1) * x.q.row(t).transpose()));
        };
        return Sides<S>{exp_weighted_values(x.v, rotated), exp_weighted_values(x.v, product)};
      })));
  out.push_back(correction(
      "000.rope.eq1_relative", out.back(),
      "sum_j v_j exp((R_j k_j)^T (R_t q_t)) = sum_j v_j exp(k_j^T R_{t-j} q_t): the relative "
      "rotation is R_{t-j}, the one-step rotation R_1 applied t - j times",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const RotaryDraw<S> x = draw_rotary(d);
        const auto rotated = [&](Eigen::Index j, Eigen::Index t) { return rope_score(x, j, t); };
        const auto relative = [&](Eigen::Index j, Eigen::Index t) {
          return S(x.k.row(j).dot(R_at(x.theta, t - j) * x.q.row(t).transpose()));
        };
        return Sides<S>{exp_weighted_values(x.v, rotated), exp_weighted_values(x.v, relative)};
      })));
  const auto relative_pairs = [](bool as_written) {
    return check_of([as_written](auto &d) {
      using S = scalar_of<decltype(d)>;
      const Vec<S> theta = draw_pair_angles(d, d.sizes.K);
      std::vector<Mat<S>> lhs, rhs;
      for (long t = 1; t <= long(d.sizes.T); ++t)
        for (long i = 1; i <= t; ++i) {
          lhs.push_back(R_at(theta, t - i));
          rhs.push_back(as_written ? Mat<S>(R_at(theta, t).transpose() * R_at(theta, i))
                                   : Mat<S>(R_at(theta, i).transpose() * R_at(theta, t)));
        }
      return sides_of(lhs, rhs);
    });
  };
  out.push_back(claim("000.rope.relative", src,
                      R"(i.e.,  $\mathbf{R}_{t-i} = \mathbf{R}_t^\top \mathbf{R}_i$)",
                      "R_{t-i} = R_t^T R_i for 1 <= i <= t", relative_pairs(true)));
  out.push_back(correction("000.rope.relative_transposed", out.back(),
                           "R_{t-i} = R_i^T R_t for 1 <= i <= t", relative_pairs(false)));
  const auto products = [](bool as_written) {
    return check_of([as_written](auto &d) {
      using S = scalar_of<decltype(d)>;
      const Vec<S> theta = draw_pair_angles(d, d.sizes.K);
      std::vector<Mat<S>> lhs, rhs;
      for (long t = 1; t <= long(d.sizes.T); ++t)
        for (long i = 0; i <= t; ++i) {
          Mat<S> one_step = Mat<S>::Identity(2 * theta.size(), 2 * theta.size());
          for (long s = i + 1; s <= t; ++s)
            one_step = (one_step * R_at(theta, 1)).eval();
          lhs.push_back(as_written ? product_of_R(theta, i + 1, t) : one_step);
          rhs.push_back(R_at(theta, t - i));
        }
      return sides_of(lhs, rhs);
    });
  };
  out.push_back(claim(
      "000.rope.product", src,
      R"(\prod_{j=i+1}^t \mathbf{R}_j = \begin{pmatrix} \cos((t-i)\theta_k) & -\sin((t-i)\theta_k))",
      "prod_{j=i+1}^t R_j = R((t - i) theta), R_j the rotation by j theta as the note defines it",
      products(true)));
  out.push_back(
      correction("000.rope.product_one_step", out.back(),
                 "R_1^{t-i} = R((t - i) theta): t - i one-step rotations, not R_{i+1} ... R_t",
                 products(false)));
  // (2): rotations applied to the values.
  const auto vo_rope = [](bool as_written) {
    return check_of([as_written](auto &d) {
      using S = scalar_of<decltype(d)>;
      using std::exp;
      const RotaryDraw<S> x = draw_rotary(d);
      const Eigen::Index T = x.q.rows();
      const Vec<S> value_theta = draw_pair_angles(d, d.sizes.V);
      Mat<S> lhs(T, x.v.cols()), rhs = Mat<S>::Zero(T, x.v.cols());
      for (Eigen::Index t = 0; t < T; ++t) {
        Vec<S> sum = Vec<S>::Zero(x.v.cols());
        for (Eigen::Index j = 0; j <= t; ++j) {
          const S weight = exp(S(x.k.row(j).dot(x.q.row(t))));
          sum += weight * (R_at(value_theta, j + 1) * x.v.row(j).transpose());
          const Mat<S> P = as_written ? product_of_R(value_theta, j + 2, t + 1)
                                      : Mat<S>(R_at(value_theta, t - j).transpose());
          rhs.row(t) += weight * (P * x.v.row(j).transpose()).transpose();
        }
        lhs.row(t) = (R_at(value_theta, t + 1).transpose() * sum).transpose();
      }
      return Sides<S>{lhs, rhs};
    });
  };
  out.push_back(claim(
      "000.vo_rope.eq2", {seed_000, src.section, "(2)"},
      R"(\left( \prod_{s=i+1}^t \mathbf{R}_s \right) \mathbf{v}_j \exp(\mathbf{k}_j^\top \mathbf{q}_t) \quad (2))",
      "R_t^T sum_j (R_j v_j) exp(k_j^T q_t) = sum_j (prod_{s=j+1}^t R_s) v_j exp(k_j^T q_t) (i "
      "read as j)",
      vo_rope(true)));
  out.push_back(correction(
      "000.vo_rope.eq2_transposed", out.back(),
      "R_t^T sum_j (R_j v_j) exp(k_j^T q_t) = sum_j R_{t-j}^T v_j exp(k_j^T q_t): the values "
      "turn back by (t - j) theta",
      vo_rope(false)));
  for (Claim &c : out)
    c.sizes = {5, 2, 2, 1}; // K and V count pairs: 4 key and 4 value features
  return out;
}

// --- The gated Oja rule: shared quantities (section 1.3) --------------------------------

/// One head of the gated Oja rule with a drawn initial state: the value gate alpha_t =
/// exp(g_t) in (0, 1)^V and beta_t in (0, 1].
template <class S> Head<S> draw_oja(Draw<S> &d) { return draw_head(d, d.sizes.V, true, true); }

/// v_i, k_i, q_i of the note (1-based), as column vectors.
template <class S> Vec<S> v_(const Head<S> &x, Eigen::Index i) {
  return x.v.row(i - 1).transpose();
}
template <class S> Vec<S> k_(const Head<S> &x, Eigen::Index i) {
  return x.k.row(i - 1).transpose();
}

/// alpha^{from..to} = prod_{j=from}^{to} alpha_j element-wise (ones when from > to).
template <class S> Vec<S> alpha_span(const Mat<S> &alpha, Eigen::Index from, Eigen::Index to) {
  Vec<S> p = Vec<S>::Ones(alpha.cols());
  for (Eigen::Index j = from; j <= to; ++j)
    p = p.cwiseProduct(alpha.row(j - 1).transpose());
  return p;
}

/// (I - beta_s v_s v_s^T) Diag(alpha_s), one step of the rule in the note's layout.
template <class S> Mat<S> oja_step(const Head<S> &x, const Mat<S> &alpha, Eigen::Index s) {
  const Vec<S> v = v_(x, s);
  const Eigen::Index V = v.size();
  return (Mat<S>::Identity(V, V) - x.beta(s - 1) * v * v.transpose()) *
         alpha.row(s - 1).transpose().asDiagonal();
}

/// The reference's states S_1 ... S_T in the note's layout [V, K].
template <class S> std::vector<Mat<S>> oja_states(const Head<S> &x) {
  std::vector<Mat<S>> states =
      states_of(x, [](const Head<S> &y) { return gated_oja::recurrent_head(y, S(1)); });
  for (Mat<S> &s : states)
    s = s.transpose().eval();
  return states;
}

/// The head with every key zero (the states are then D^r S^0) or with no initial state
/// (the states are then H^r).
template <class S> Head<S> without_keys(Head<S> x) {
  x.k.setZero();
  return x;
}
template <class S> Head<S> without_initial_state(Head<S> x) {
  x.h0.setZero();
  return x;
}

/// How the note's undefined alpha^{i:r} is read: prod_{j=i+offset}^{r}, and its leading
/// Diag(alpha^{1:r}) as prod_{j=1+lead_offset}^{r}.
struct SpanReading {
  std::string name;
  int offset, lead_offset;
};
const SpanReading inclusive_span{"alpha^{i:r} = prod_{j=i}^r alpha_j", 0, 0};
const SpanReading exclusive_span{"alpha^{i:r} = prod_{j=i+1}^r alpha_j", 1, 1};
const SpanReading corrected_span{"alpha^{1:r} = prod_{j=1}^r, alpha^{i:r} = prod_{j=i+1}^r in "
                                 "the sums",
                                 1, 0};

template <class S> struct Spans {
  const Mat<S> &alpha;
  SpanReading reading;
  Vec<S> lead(Eigen::Index r) const { return alpha_span(alpha, 1 + reading.lead_offset, r); }
  Vec<S> from(Eigen::Index i, Eigen::Index r) const {
    return alpha_span(alpha, i + reading.offset, r);
  }
};

/// v_i^T Diag(alpha^{i:r}) v_r, the coupling of the WY recursions.
template <class S>
S coupling(const Head<S> &x, const Spans<S> &span, Eigen::Index i, Eigen::Index r) {
  return v_(x, i).dot(span.from(i, r).cwiseProduct(v_(x, r)));
}

/// w_r = beta_r (Diag(alpha^{1:r}) v_r - sum_{i<r} w_i (v_i^T Diag(alpha^{i:r}) v_r)); rows w_r^T.
template <class S> Mat<S> wy_w(const Head<S> &x, const Spans<S> &span) {
  const Eigen::Index T = x.v.rows();
  Mat<S> w(T, x.v.cols());
  for (Eigen::Index r = 1; r <= T; ++r) {
    Vec<S> acc = span.lead(r).cwiseProduct(v_(x, r));
    for (Eigen::Index i = 1; i < r; ++i)
      acc -= w.row(i - 1).transpose() * coupling(x, span, i, r);
    w.row(r - 1) = (x.beta(r - 1) * acc).transpose();
  }
  return w;
}

/// u_r = beta_r (k_r - sum_{i<r} u_i (v_i^T Diag(alpha^{i:r}) v_r)); rows u_r^T.
template <class S> Mat<S> wy_u(const Head<S> &x, const Spans<S> &span) {
  const Eigen::Index T = x.k.rows();
  Mat<S> u(T, x.k.cols());
  for (Eigen::Index r = 1; r <= T; ++r) {
    Vec<S> acc = k_(x, r);
    for (Eigen::Index i = 1; i < r; ++i)
      acc -= u.row(i - 1).transpose() * coupling(x, span, i, r);
    u.row(r - 1) = (x.beta(r - 1) * acc).transpose();
  }
  return u;
}

/// sum_{i<=r} Diag(alpha^{i:r}) v_i rows_i: the sums of D^r, H^r and the vector form.
template <class S>
Mat<S> decayed_sum(const Head<S> &x, const Spans<S> &span, const Mat<S> &rows, Eigen::Index r) {
  Mat<S> sum = Mat<S>::Zero(x.v.cols(), rows.cols());
  for (Eigen::Index i = 1; i <= r; ++i)
    sum += span.from(i, r).cwiseProduct(v_(x, i)) * rows.row(i - 1);
  return sum;
}

/// Rows t of A^{1->C}: alpha^{1..t} of the chunk (chunk-local cumulative products).
template <class S> Mat<S> cumulative_alpha(const Mat<S> &alpha) {
  Mat<S> A(alpha.rows(), alpha.cols());
  for (Eigen::Index t = 1; t <= alpha.rows(); ++t)
    A.row(t - 1) = alpha_span(alpha, 1, t).transpose();
  return A;
}

/// The UT transform: M = (I + lower(Diag(beta) (V . A)(V / A)^T))^-1, W = M Diag(beta) (A . V),
/// U = M Diag(beta) K; `strictly` says whether lower() drops the diagonal.
template <class S> struct UT { Mat<S> W, U; };
template <class S> UT<S> ut_transform(const Head<S> &x, const Mat<S> &alpha, bool strictly) {
  const Mat<S> A = cumulative_alpha(alpha);
  const Eigen::Index n = x.v.rows();
  const Mat<S> beta = x.beta.asDiagonal().toDenseMatrix();
  const Mat<S> inner = beta * x.v.cwiseProduct(A) * x.v.cwiseQuotient(A).transpose();
  const Mat<S> lower = inner.cwiseProduct(causal_mask<S>(n, !strictly));
  const Mat<S> M = (Mat<S>::Identity(n, n) + lower)
                       .template triangularView<Eigen::Lower>()
                       .solve(Mat<S>::Identity(n, n));
  return {M * beta * A.cwiseProduct(x.v), M * beta * x.k};
}

/// S^r = Diag(alpha^{1:r}) S^0 + sum_i Diag(alpha^{i:r}) v_i (u_i^T - w_i^T S^0), r = 1..T.
template <class S>
std::vector<Mat<S>> vector_form_states(const Head<S> &x, const Spans<S> &span, const UT<S> &ut) {
  const Mat<S> S0 = x.h0.transpose();
  const Mat<S> pseudo_keys = ut.U - ut.W * S0; // rows u_i^T - w_i^T S^0
  std::vector<Mat<S>> states;
  for (Eigen::Index r = 1; r <= x.v.rows(); ++r)
    states.push_back(span.lead(r).asDiagonal() * S0 + decayed_sum(x, span, pseudo_keys, r));
  return states;
}

/// The states as a T x (V K) matrix of rows, to compare with outputs row by row.
template <class S> Mat<S> outputs_of(const std::vector<Mat<S>> &states, const Mat<S> &q) {
  Mat<S> o(q.rows(), states.front().rows());
  for (Eigen::Index t = 0; t < q.rows(); ++t)
    o.row(t) = (states[std::size_t(t)] * q.row(t).transpose()).transpose();
  return o;
}

// --- Gated DeltaNet and gated Oja as position encodings (sections 1.1, 1.2) ---------------

/// prod_{s=from}^{to} step(s), left to right in the order given (identity when empty).
template <class S, class Step>
Mat<S> ordered_product(Eigen::Index n, Eigen::Index from, Eigen::Index to, bool increasing,
                       Step step) {
  Mat<S> P = Mat<S>::Identity(n, n);
  for (Eigen::Index s = from; s <= to; ++s)
    P = (P * step(increasing ? s : from + to - s)).eval();
  return P;
}

std::vector<Claim> position_encodings() {
  std::vector<Claim> out;
  // (3): o_t = sum_j v_j (k_j^T prod_{s=j+1}^t Diag(alpha_s)(I - beta_s k_s k_s^T) q_t).
  const auto qk_encoding = [](bool with_beta) {
    return check_of([with_beta](auto &d) {
      using S = scalar_of<decltype(d)>;
      Head<S> x = draw_head(d, d.sizes.K, true);
      const Mat<S> alpha = exp_of(x.g);
      const Eigen::Index T = x.q.rows(), K = x.q.cols();
      const auto step = [&](Eigen::Index s) {
        return Mat<S>(alpha.row(s - 1).transpose().asDiagonal() *
                      (Mat<S>::Identity(K, K) - x.beta(s - 1) * k_(x, s) * k_(x, s).transpose()));
      };
      Mat<S> o = Mat<S>::Zero(T, x.v.cols());
      for (Eigen::Index t = 1; t <= T; ++t)
        for (Eigen::Index j = 1; j <= t; ++j) {
          const S weight = k_(x, j).dot(ordered_product<S>(K, j + 1, t, true, step) *
                                        x.q.row(t - 1).transpose());
          o.row(t - 1) += (with_beta ? x.beta(j - 1) : S(1)) * weight * x.v.row(j - 1);
        }
      return Sides<S>{o, kda::recurrent_head(x, S(1)).o};
    });
  };
  const Source qk{seed_000, "1.1 Gated Delta Rule as QK Position Encodings", "(3)"};
  const std::string eq3 =
      R"(\prod_{s=j+1}^t \text{diag}(\boldsymbol{\alpha}_s) (\mathbf{I} - \beta_s \mathbf{k}_s \mathbf{k}_s^\top) \right) \mathbf{q}_t \right) \quad (3))";
  out.push_back(claim("000.gdr.eq3", qk, eq3,
                      "o_t = sum_j v_j (k_j^T (prod_{s=j+1}^t Diag(alpha_s)(I - beta_s k_s "
                      "k_s^T)) q_t) is the gated delta rule's output (product left to right in s)",
                      qk_encoding(false)));
  out.push_back(
      correction("000.gdr.eq3_beta", out.back(),
                 "o_t = sum_j beta_j v_j (k_j^T (prod_{s=j+1}^t Diag(alpha_s)(I - beta_s k_s "
                 "k_s^T)) q_t): the write strength beta_j of v_j restored",
                 qk_encoding(true)));
  // (4): o_t = sum_j (prod_{s=j+1}^t (I - beta_s v_s v_s^T) Diag(alpha_s)) v_j (k_j^T q_t).
  const auto vo_encoding = [](bool corrected) {
    return check_of([corrected](auto &d) {
      using S = scalar_of<decltype(d)>;
      const Head<S> x = draw_oja(d);
      const Head<S> y = without_initial_state(x);
      const Mat<S> alpha = exp_of(x.g);
      const Eigen::Index T = x.q.rows(), V = x.v.cols();
      const auto step = [&](Eigen::Index s) { return oja_step(y, alpha, s); };
      Mat<S> o = Mat<S>::Zero(T, V);
      for (Eigen::Index t = 1; t <= T; ++t)
        for (Eigen::Index j = 1; j <= t; ++j) {
          const Mat<S> P = ordered_product<S>(V, j + 1, t, !corrected, step);
          const S score = k_(y, j).dot(y.q.row(t - 1).transpose());
          o.row(t - 1) += ((corrected ? y.beta(j - 1) : S(1)) * score * (P * v_(y, j))).transpose();
        }
      return Sides<S>{o, gated_oja::recurrent_head(y, S(1)).o};
    });
  };
  const Source vo{seed_000, "1.2 Gated Oja Rule as VO Position Encodings", "(4)"};
  const std::string eq4 =
      R"(\prod_{s=j+1}^t (\mathbf{I} - \beta_s \mathbf{v}_s \mathbf{v}_s^\top) \text{diag}(\boldsymbol{\alpha}_s) \right) \mathbf{v}_j (\mathbf{k}_j^\top \mathbf{q}_t) \quad (4))";
  out.push_back(claim("000.oja.eq4", vo, eq4,
                      "o_t = sum_j (prod_{s=j+1}^t (I - beta_s v_s v_s^T) Diag(alpha_s)) v_j "
                      "(k_j^T q_t) is the gated Oja rule's output (product left to right in s)",
                      vo_encoding(false)));
  out.push_back(
      correction("000.oja.eq4_ordered", out.back(),
                 "o_t = sum_j (prod_{s=t down to j+1} (I - beta_s v_s v_s^T) Diag(alpha_s)) "
                 "beta_j v_j (k_j^T q_t): the latest step leftmost, beta_j restored",
                 vo_encoding(true)));
  for (Claim &c : out)
    c.sizes = {5, 3, 2, 1};
  return out;
}

// --- The gated Oja rule: recurrence, WY, UT, vector and matrix forms (section 1.3) --------

std::vector<Claim> gated_oja_forms() {
  const Source src{seed_000, "1.3 Gated Oja Rule with Value Gate", ""};
  std::vector<Claim> out;
  out.push_back(claim(
      "000.oja.step_identity", src,
      R"(= (\mathbf{I} - \beta_t \mathbf{v}_t \mathbf{v}_t^\top) \text{Diag}(\boldsymbol{\alpha}_t) \mathbf{S}_{t-1} + \beta_t \mathbf{v}_t \mathbf{k}_t^\top$$)",
      "Diag(alpha_t) S_{t-1} + beta_t v_t (k_t^T - v_t^T Diag(alpha_t) S_{t-1}) = (I - beta_t v_t "
      "v_t^T) Diag(alpha_t) S_{t-1} + beta_t v_t k_t^T",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const Mat<S> prev = d.values(d.sizes.V, d.sizes.K);
        const Mat<S> alpha = exp_of(d.log_gates(1, d.sizes.V));
        const Vec<S> v = d.values(d.sizes.V, 1).col(0), k = d.values(d.sizes.K, 1).col(0);
        const S beta = d.positive();
        const Mat<S> decayed = alpha.row(0).transpose().asDiagonal() * prev;
        const Eigen::Index V = v.size();
        const Mat<S> lhs = decayed + beta * v * (k.transpose() - v.transpose() * decayed);
        const Mat<S> rhs = (Mat<S>::Identity(V, V) - beta * v * v.transpose()) * decayed +
                           beta * v * k.transpose();
        return Sides<S>{lhs, rhs};
      })));
  out.push_back(claim(
      "000.oja.recurrence", src,
      R"(\mathbf{S}_t = \text{Diag}(\boldsymbol{\alpha}_t) \mathbf{S}_{t-1} + \beta_t \mathbf{v}_t (\mathbf{k}_t^\top - \mathbf{v}_t^\top \text{Diag}(\boldsymbol{\alpha}_t) \mathbf{S}_{t-1}))",
      "S_t = Diag(alpha_t) S_{t-1} + beta_t v_t (k_t^T - v_t^T Diag(alpha_t) S_{t-1}) is the gated "
      "Oja rule (every S_t, the reference's state transposed)",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const Head<S> x = draw_oja(d);
        const Mat<S> alpha = exp_of(x.g);
        std::vector<Mat<S>> states;
        Mat<S> state = x.h0.transpose();
        for (Eigen::Index t = 1; t <= x.q.rows(); ++t) {
          const Mat<S> decayed = alpha.row(t - 1).transpose().asDiagonal() * state;
          state = decayed + x.beta(t - 1) * v_(x, t) *
                                (k_(x, t).transpose() - v_(x, t).transpose() * decayed);
          states.push_back(state);
        }
        return sides_of(states, oja_states(x));
      })));
  // The partial expansion S^r = D^r S^0 + H^r, products left to right in the index.
  const Source expansion{seed_000, src.section, "D^r, H^r"};
  const std::string expansion_quote =
      R"(:= \mathbf{D}_{[t]}^r \text{ ("pseudo" memory decay)}} \mathbf{S}_{[t]}^0 + \underbrace{\sum_{i=1}^r)";
  const auto expanded = [](bool latest_left) {
    return check_of([latest_left](auto &d) {
      using S = scalar_of<decltype(d)>;
      const Head<S> x = draw_oja(d);
      const Mat<S> alpha = exp_of(x.g);
      const Eigen::Index V = x.v.cols();
      const auto step = [&](Eigen::Index s) { return oja_step(x, alpha, s); };
      std::vector<Mat<S>> states;
      for (Eigen::Index r = 1; r <= x.q.rows(); ++r) {
        Mat<S> state = ordered_product<S>(V, 1, r, !latest_left, step) * x.h0.transpose();
        for (Eigen::Index i = 1; i <= r; ++i)
          state += ordered_product<S>(V, i + 1, r, !latest_left, step) * x.beta(i - 1) * v_(x, i) *
                   k_(x, i).transpose();
        states.push_back(state);
      }
      return sides_of(states, oja_states(x));
    });
  };
  out.push_back(claim("000.oja.partial_expansion", expansion, expansion_quote,
                      "S^r = D^r S^0 + H^r, D^r = prod_{i=1}^r (I - beta_i v_i v_i^T) "
                      "Diag(alpha_i), H^r = sum_i (prod_{j=i+1}^r ...) beta_i v_i k_i^T, "
                      "products left to right in the index",
                      expanded(false)));
  out.push_back(
      correction("000.oja.partial_expansion_ordered", out.back(),
                 "S^r = D^r S^0 + H^r with every product taken with the latest step "
                 "leftmost: D^r = P_r ... P_1, P_i = (I - beta_i v_i v_i^T) Diag(alpha_i)",
                 expanded(true)));
  // WY representation of D^r: its truth is the rule run with zero keys from S^0.
  const Source wy{seed_000, src.section, "WY representation"};
  const std::string d_quote =
      R"(\mathbf{D}_{[t]}^r &= \text{Diag}(\boldsymbol{\alpha}_{[t]}^{1:r}) - \sum_{i=1}^r \text{Diag}(\boldsymbol{\alpha}_{[t]}^{i:r}) \mathbf{v}_{[t]}^i \mathbf{w}_{[t]}^{i\top})";
  const auto wy_D = [](SpanReading reading) {
    return check_of([reading](auto &d) {
      using S = scalar_of<decltype(d)>;
      const Head<S> x = draw_oja(d);
      const Mat<S> alpha = exp_of(x.g);
      const Spans<S> span{alpha, reading};
      const Mat<S> w = wy_w(x, span), S0 = x.h0.transpose();
      std::vector<Mat<S>> decayed;
      for (Eigen::Index r = 1; r <= x.q.rows(); ++r) {
        const Mat<S> D = span.lead(r).asDiagonal().toDenseMatrix() - decayed_sum(x, span, w, r);
        decayed.push_back(D * S0);
      }
      return sides_of(decayed, oja_states(without_keys(x)));
    });
  };
  const std::string d_statement =
      "D^r = Diag(alpha^{1:r}) - sum_{i<=r} Diag(alpha^{i:r}) v_i w_i^T, w_r = beta_r "
      "(Diag(alpha^{1:r}) v_r - sum_{i<r} w_i (v_i^T Diag(alpha^{i:r}) v_r)); alpha^{i:r} is "
      "not defined in the note";
  Claim D = claim("000.oja.wy_D", wy, d_quote, d_statement);
  for (const SpanReading &r : {inclusive_span, exclusive_span})
    D.readings.push_back({r.name, d_statement, wy_D(r)});
  out.push_back(D);
  out.push_back(correction("000.oja.wy_D_corrected", out.back(),
                           "the same with alpha^{1:r} = prod_{j=1}^r alpha_j and alpha^{i:r} = "
                           "prod_{j=i+1}^r alpha_j in the sums and in w_r's coupling",
                           wy_D(corrected_span)));
  // WY representation of H^r: its truth is the rule run from a zero state.
  const std::string h_statement =
      "H^r = sum_{i<=r} Diag(alpha^{i:r}) v_i u_i^T, u_r = beta_r (k_r - sum_{i<r} u_i (v_i^T "
      "Diag(alpha^{i:r}) v_r)); alpha^{i:r} is not defined in the note";
  Claim H = claim(
      "000.oja.wy_H", wy,
      R"(\mathbf{H}_{[t]}^r &= \sum_{i=1}^r \text{Diag}(\boldsymbol{\alpha}_{[t]}^{i:r}) \mathbf{v}_{[t]}^i \mathbf{u}_{[t]}^{i\top})",
      h_statement);
  for (const SpanReading &reading : {inclusive_span, exclusive_span})
    H.readings.push_back({reading.name, h_statement, check_of([reading](auto &d) {
                            using S = scalar_of<decltype(d)>;
                            const Head<S> x = without_initial_state(draw_oja(d));
                            const Mat<S> alpha = exp_of(x.g);
                            const Spans<S> span{alpha, reading};
                            const Mat<S> u = wy_u(x, span);
                            std::vector<Mat<S>> incremental;
                            for (Eigen::Index r = 1; r <= x.q.rows(); ++r)
                              incremental.push_back(decayed_sum(x, span, u, r));
                            return sides_of(incremental, oja_states(x));
                          })});
  out.push_back(H);
  // The UT transform against the WY recursions (as corrected: w, u rows).
  const std::string ut_statement =
      "W = M Diag(beta) (A . V), U = M Diag(beta) K, M = (I + lower(Diag(beta) (V . A)(V / "
      "A)^T))^-1, A row r = alpha^{1..r}: W, U are the rows w_r, u_r of the WY recursions "
      "(V^T / A read as (V / A)^T; lower() not defined in the note)";
  Claim ut = claim(
      "000.oja.ut_transform", {seed_000, src.section, "UT transform"},
      R"(\mathbf{M}_{[t]} &= \left( \mathbf{I} + \text{lower} \left( \text{Diag}(\beta_{[t]}^{1 \rightarrow C}))",
      ut_statement);
  for (const bool strictly : {true, false})
    ut.readings.push_back(
        {strictly ? "lower() strictly below the diagonal" : "lower() with the diagonal",
         ut_statement, check_of([strictly](auto &d) {
           using S = scalar_of<decltype(d)>;
           const Head<S> x = draw_oja(d);
           const Mat<S> alpha = exp_of(x.g);
           const UT<S> t = ut_transform(x, alpha, strictly);
           const Spans<S> span{alpha, corrected_span};
           return Sides<S>{
               stack<S>({t.W.transpose(), t.U.transpose()}),
               stack<S>({Mat<S>(wy_w(x, span).transpose()), Mat<S>(wy_u(x, span).transpose())})};
         })});
  out.push_back(ut);
  // The UT transform's two results, W and U, each a claim of its own.
  for (const bool is_W : {true, false}) {
    const std::string statement =
        is_W ? "W = M Diag(beta) (A . V), M as the UT transform's: the rows w_r of the WY "
               "recursion (as corrected)"
             : "U = M Diag(beta) K, M as the UT transform's: the rows u_r of the WY recursion";
    Claim c = claim(
        is_W ? "000.oja.ut_W" : "000.oja.ut_U", {seed_000, src.section, "UT transform"},
        is_W
            ? R"(\mathbf{W}_{[t]} &= \mathbf{M}_{[t]} \text{Diag}(\beta_{[t]}^{1 \rightarrow C}) \left( \mathbf{A}_{[t]}^{1 \rightarrow C} \odot \mathbf{V}_{[t]} \right))"
            : R"(\mathbf{U}_{[t]} &= \mathbf{M}_{[t]} \text{Diag}(\beta_{[t]}^{1 \rightarrow C}) \mathbf{K}_{[t]})",
        statement);
    for (const bool strictly : {true, false})
      c.readings.push_back(
          {strictly ? "lower() strictly below the diagonal" : "lower() with the diagonal",
           statement, check_of([strictly, is_W](auto &d) {
             using S = scalar_of<decltype(d)>;
             const Head<S> x = draw_oja(d);
             const Mat<S> alpha = exp_of(x.g);
             const UT<S> t = ut_transform(x, alpha, strictly);
             const Spans<S> span{alpha, corrected_span};
             return is_W ? Sides<S>{t.W.transpose(), wy_w(x, span).transpose()}
                         : Sides<S>{t.U.transpose(), wy_u(x, span).transpose()};
           })});
    out.push_back(c);
  }
  // The vector form of S^r and o^r with W, U from the UT transform.
  const auto vector_form = [](SpanReading reading, bool outputs) {
    return check_of([reading, outputs](auto &d) {
      using S = scalar_of<decltype(d)>;
      const Head<S> x = draw_oja(d);
      const Mat<S> alpha = exp_of(x.g);
      const Spans<S> span{alpha, reading};
      const std::vector<Mat<S>> states = vector_form_states(x, span, ut_transform(x, alpha, true));
      if (outputs)
        return Sides<S>{outputs_of(states, x.q), gated_oja::recurrent_head(x, S(1)).o};
      return sides_of(states, oja_states(x));
    });
  };
  const Source vec{seed_000, src.section, "vector form"};
  for (const bool outputs : {false, true}) {
    const std::string id = outputs ? "000.oja.vector_form_o" : "000.oja.vector_form_S";
    const std::string quote =
        outputs
            ? R"(\mathbf{o}_{[t]}^r &= \mathbf{S}_{[t]}^r \mathbf{q}_{[t]}^r = \text{Diag}(\boldsymbol{\alpha}_{[t]}^{1:r}) \mathbf{S}_{[t]}^0 \mathbf{q}_{[t]}^r)"
            : R"(\mathbf{S}_{[t]}^r &= \mathbf{D}_{[t]}^r \mathbf{S}_{[t]}^0 + \mathbf{H}_{[t]}^r = \text{Diag}(\boldsymbol{\alpha}_{[t]}^{1:r}) \mathbf{S}_{[t]}^0)";
    const std::string statement =
        std::string(outputs ? "o^r = S^r q^r = " : "S^r = ") + "Diag(alpha^{1:r}) S^0" +
        (outputs ? " q^r" : "") + " + sum_{i<=r} Diag(alpha^{i:r}) v_i (u_i - w_i^T S^0)" +
        (outputs ? " q^r" : "") +
        ", W and U from the UT transform; alpha^{i:r} is not defined in the note";
    Claim c = claim(id, vec, quote, statement);
    for (const SpanReading &r : {inclusive_span, exclusive_span})
      c.readings.push_back({r.name, statement, vector_form(r, outputs)});
    out.push_back(c);
    out.push_back(correction(id + "_corrected", c,
                             "the same with alpha^{1:r} = prod_{j=1}^r alpha_j and alpha^{i:r} = "
                             "prod_{j=i+1}^r alpha_j in the sum",
                             vector_form(corrected_span, outputs)));
  }
  for (Claim &c : out)
    if (c.id != "000.oja.step_identity")
      c.sizes = {5, 3, 3, 1};
  return out;
}

/// The matrix form, chunk by chunk: for each chunk, the state at its start (note layout)
/// and the chunk's slice of the head.
template <class S, class PerChunk>
Sides<S> over_chunks(const Head<S> &x, std::size_t C, PerChunk per_chunk) {
  std::vector<Mat<S>> lhs, rhs;
  Mat<S> state = x.h0.transpose();
  for (const auto &[begin, size] : shared::chunks_of(x.q.rows(), C)) {
    Head<S> chunk = x;
    chunk.q = x.q.middleRows(begin, size), chunk.k = x.k.middleRows(begin, size);
    chunk.v = x.v.middleRows(begin, size), chunk.g = x.g.middleRows(begin, size);
    chunk.beta = x.beta.segment(begin, size);
    chunk.h0 = state.transpose();
    const Sides<S> s = per_chunk(chunk, state);
    lhs.push_back(s.lhs), rhs.push_back(s.rhs);
    state = oja_states(chunk).back();
  }
  return sides_of(lhs, rhs);
}

std::vector<Claim> matrix_forms() {
  const Source src{seed_000, "1.3 Gated Oja Rule with Value Gate", "matrix form"};
  std::vector<Claim> out;
  const std::string statement =
      "S_[t+1] = Diag(alpha^{1:C}) S_[t] + (A^{i->C} . V)^T (U - W S_[t]) chunk by chunk; "
      "A^{i->C} (row i the decay from i to the chunk's end) is not defined in the note";
  Claim state = claim(
      "000.oja.matrix_form_S", src,
      R"(\mathbf{S}_{[t+1]} &= \text{Diag}(\boldsymbol{\alpha}_{[t]}^{1:C}) \mathbf{S}_{[t]} + \left( \mathbf{A}_{[t]}^{i \rightarrow C} \odot \mathbf{V}_{[t]} \right)^\top)",
      statement);
  for (const int offset : {0, 1})
    state.readings.push_back(
        {offset == 0 ? "A^{i->C} row i = prod_{j=i}^C alpha_j"
                     : "A^{i->C} row i = prod_{j=i+1}^C alpha_j",
         statement, check_of([offset](auto &d) {
           using S = scalar_of<decltype(d)>;
           const Head<S> x = draw_oja(d);
           return over_chunks(x, d.sizes.C, [&](const Head<S> &c, const Mat<S> &S_t) {
             const Mat<S> alpha = exp_of(c.g);
             const Eigen::Index n = c.q.rows();
             Mat<S> to_end(n, alpha.cols()); // A^{i->C}
             for (Eigen::Index i = 1; i <= n; ++i)
               to_end.row(i - 1) = alpha_span(alpha, i + offset, n).transpose();
             const UT<S> ut = ut_transform(c, alpha, true);
             const Mat<S> next = alpha_span(alpha, 1, n).asDiagonal() * S_t +
                                 to_end.cwiseProduct(c.v).transpose() * (ut.U - ut.W * S_t);
             return Sides<S>{next, oja_states(c).back()};
           });
         })});
  out.push_back(state);
  out.push_back(claim(
      "000.oja.vo_rope_O", src,
      R"(\textbf{VO-RoPE: } \mathbf{O}_{[t]} &= \mathbf{A}_{[t]}^{1 \rightarrow C} \odot \left( \mathbf{Q}_{[t]} \mathbf{S}_{[t]}^\top)",
      "O_[t] = A^{1->C} . (Q S_[t]^T + Tril(Q (U - W S_[t])^T) V / A^{1->C}), chunk by chunk",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const Head<S> x = draw_oja(d);
        return over_chunks(x, d.sizes.C, [&](const Head<S> &c, const Mat<S> &S_t) {
          const Mat<S> alpha = exp_of(c.g);
          const Mat<S> A = cumulative_alpha(alpha);
          const UT<S> ut = ut_transform(c, alpha, true);
          const Mat<S> scores = c.q * (ut.U - ut.W * S_t).transpose();
          const Mat<S> O = A.cwiseProduct(c.q * S_t.transpose() +
                                          scores.cwiseProduct(causal_mask<S>(scores.rows())) *
                                              c.v.cwiseQuotient(A));
          return Sides<S>{O, gated_oja::recurrent_head(c, S(1)).o};
        });
      })));
  for (Claim &c : out)
    c.sizes = {7, 3, 2, 3};
  return out;
}

} // namespace

std::vector<Claim> seed_000_claims() {
  std::vector<Claim> out;
  for (auto part : {rotations, position_encodings, gated_oja_forms, matrix_forms})
    for (Claim &c : part())
      out.push_back(std::move(c));
  return out;
}

} // namespace ruleproof::proofs::notes
