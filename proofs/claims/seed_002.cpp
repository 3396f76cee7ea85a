// ruleproof: the claims of seed 002 (linear attention and GLA: recurrent, parallel and
// log-space forms). The truth is the reference: linear_attn and gla's recurrent form.
#include "claims.hpp"
#include "common.hpp"
#include "reference/linear_attn/linear_attn.hpp"

namespace ruleproof::proofs::notes {
namespace {

/// The first t rows of a head (its initial state kept).
template <class S> Head<S> prefix(const Head<S> &x, Eigen::Index t) {
  Head<S> y = x;
  y.q = x.q.topRows(t), y.k = x.k.topRows(t), y.v = x.v.topRows(t), y.g = x.g.topRows(t);
  y.a = x.a.topRows(t), y.b = x.b.topRows(t);
  return y;
}

/// The reference's states S_1 ... S_T of gla (each the final state of a prefix).
template <class S> std::vector<Mat<S>> gla_states(const Head<S> &x) {
  std::vector<Mat<S>> states;
  for (Eigen::Index t = 1; t <= x.q.rows(); ++t)
    states.push_back(gla::recurrent_head(prefix(x, t), S(1)).ht);
  return states;
}

/// Normalised linear attention as the reference computes it (identity feature map).
template <class S> Mat<S> normalised_reference(Head<S> x) {
  const linear_attn::Variant var{true, linear_attn::FeatureMap::identity};
  x.h0 = Mat<S>::Zero(x.k.cols(), x.v.cols() + 1); // the state [S | z]
  return linear_attn::normalise(gla::recurrent_head(linear_attn::as_gla(x, var), S(1)), var).o;
}

/// (alpha^T 1) (.) X: row i of X times alpha_i, the note's G_t written out.
template <class S> Mat<S> gate_times(const Mat<S> &alpha_row, const Mat<S> &X) {
  return (alpha_row.transpose() * Mat<S>::Ones(1, X.cols())).cwiseProduct(X);
}

/// B: row t is b_t = prod_{j <= t} alpha_j.
template <class S> Mat<S> decay_b(const Head<S> &x) { return cumulative_decay(x.g); }

std::vector<Claim> linear_attention() {
  const Source src{seed_002, "Linear attention", ""};
  std::vector<Claim> out;
  out.push_back(claim(
      "002.linear_attn.quadratic", src,
      R"(o_t = \frac{\sum_{i=1}^t \phi(\boldsymbol{q}_t) \phi(\boldsymbol{k}_i)^\top \boldsymbol{v}_i})",
      "o_t = sum_{i<=t} phi(q_t) phi(k_i)^T v_i / sum_{i<=t} phi(q_t) phi(k_i)^T",
      check_of([](auto &d) {
        using S = typename std::decay_t<decltype(d)>::Scalar;
        Head<S> x = draw_head(d, 0);
        x.q = d.positives(d.sizes.T, d.sizes.K), x.k = d.positives(d.sizes.T, d.sizes.K);
        Mat<S> o(x.q.rows(), x.v.cols());
        for (Eigen::Index t = 0; t < x.q.rows(); ++t) {
          Mat<S> num = Mat<S>::Zero(1, x.v.cols());
          S den(0);
          for (Eigen::Index i = 0; i <= t; ++i) {
            const S score = x.q.row(t).dot(x.k.row(i));
            num += score * x.v.row(i), den += score;
          }
          o.row(t) = num / den;
        }
        return Sides<S>{o, normalised_reference(x)};
      })));
  out.push_back(claim(
      "002.linear_attn.rnn", {seed_002, "Linear attention / Recurrent form", ""},
      R"(\boldsymbol{o}_t = \frac{\phi(\boldsymbol{q}_t) \boldsymbol{S}_t}{\phi(\boldsymbol{q}_t) \boldsymbol{z}_t})",
      "S_t = S_{t-1} + phi(k_t)^T v_t, z_t = z_{t-1} + phi(k_t)^T, o_t = phi(q_t) S_t / "
      "(phi(q_t) z_t)",
      check_of([](auto &d) {
        using S = typename std::decay_t<decltype(d)>::Scalar;
        Head<S> x = draw_head(d, 0);
        x.q = d.positives(d.sizes.T, d.sizes.K), x.k = d.positives(d.sizes.T, d.sizes.K);
        Mat<S> state = Mat<S>::Zero(x.k.cols(), x.v.cols()), z = Mat<S>::Zero(x.k.cols(), 1);
        Mat<S> o(x.q.rows(), x.v.cols());
        for (Eigen::Index t = 0; t < x.q.rows(); ++t) {
          state += x.k.row(t).transpose() * x.v.row(t);
          z += x.k.row(t).transpose();
          o.row(t) = x.q.row(t) * state / S((x.q.row(t) * z)(0, 0));
        }
        return Sides<S>{o, normalised_reference(x)};
      })));
  out.push_back(claim(
      "002.linear_attn.simplification", {seed_002, "Linear attention / Simplification", ""},
      R"(\boldsymbol{S}_t = \boldsymbol{S}_{t-1} + \boldsymbol{k}_t^\top \boldsymbol{v}_t, \quad \boldsymbol{o}_t = \boldsymbol{q}_t \boldsymbol{S}_t)",
      "S_t = S_{t-1} + k_t^T v_t, o_t = q_t S_t (phi the identity, no normaliser)",
      check_of([](auto &d) {
        using S = typename std::decay_t<decltype(d)>::Scalar;
        const Head<S> x = draw_head(d, 0);
        Mat<S> state = Mat<S>::Zero(x.k.cols(), x.v.cols()), o(x.q.rows(), x.v.cols());
        for (Eigen::Index t = 0; t < x.q.rows(); ++t) {
          state += x.k.row(t).transpose() * x.v.row(t);
          o.row(t) = x.q.row(t) * state;
        }
        const linear_attn::Variant plain{};
        return Sides<S>{o, gla::recurrent_head(linear_attn::as_gla(x, plain), S(1)).o};
      })));
  return out;
}

std::vector<Claim> gla_forms() {
  std::vector<Claim> out;
  const Source recurrent{seed_002, "Gated Linear Attention Layer / Recurrent form", ""};
  out.push_back(claim(
      "002.gla.recurrent", recurrent,
      R"(\boldsymbol{S}_t = \boldsymbol{G}_t \odot \boldsymbol{S}_{t-1} + \boldsymbol{k}_t^\top \boldsymbol{v}_t)",
      "S_t = G_t (.) S_{t-1} + k_t^T v_t with G_t = alpha_t^T 1, every S_t", check_of([](auto &d) {
        using S = typename std::decay_t<decltype(d)>::Scalar;
        const Head<S> x = draw_head(d, d.sizes.K);
        const Mat<S> alpha = exp_of(x.g);
        std::vector<Mat<S>> states;
        Mat<S> state = Mat<S>::Zero(x.k.cols(), x.v.cols());
        for (Eigen::Index t = 0; t < x.q.rows(); ++t) {
          state = gate_times<S>(alpha.row(t), state) + x.k.row(t).transpose() * x.v.row(t);
          states.push_back(state);
        }
        return sides_of(states, gla_states(x));
      })));
  out.push_back(claim(
      "002.gla.diag_parameterisation",
      {seed_002, "Gated Linear Attention Layer / Parameterization of G_t", ""},
      R"((\boldsymbol{\alpha}_t^\top \boldsymbol{1}) \odot \boldsymbol{S}_{t-1} + \boldsymbol{k}_t^\top \boldsymbol{v}_t = \text{Diag}(\boldsymbol{\alpha}_t) \boldsymbol{S}_{t-1})",
      "(alpha_t^T 1) (.) S_{t-1} + k_t^T v_t = Diag(alpha_t) S_{t-1} + k_t^T v_t",
      check_of([](auto &d) {
        using S = typename std::decay_t<decltype(d)>::Scalar;
        const Mat<S> alpha = exp_of(d.log_gates(1, d.sizes.K));
        const Mat<S> prev = d.values(d.sizes.K, d.sizes.V), k = d.values(1, d.sizes.K);
        const Mat<S> v = d.values(1, d.sizes.V);
        const Mat<S> outer = k.transpose() * v;
        const Mat<S> diag = alpha.row(0).transpose().asDiagonal() * prev;
        return Sides<S>{gate_times<S>(alpha, prev) + outer, diag + outer};
      })));
  out.push_back(claim(
      "002.gla.G_in_unit_interval", recurrent, R"(\boldsymbol{G}_t \in (0, 1)^{d_k \times d_v})",
      "every entry of G_t = alpha_t^T 1 lies in (0, 1) for log-gates g_t < 0",
      check_of([](auto &d) {
        using S = typename std::decay_t<decltype(d)>::Scalar;
        const Mat<S> alpha = exp_of(d.log_gates(d.sizes.T, d.sizes.K));
        Mat<S> inside = Mat<S>::Zero(alpha.rows(), d.sizes.V);
        for (Eigen::Index t = 0; t < alpha.rows(); ++t) {
          const Mat<S> G = alpha.row(t).transpose() * Mat<S>::Ones(1, d.sizes.V);
          for (Eigen::Index i = 0; i < G.rows(); ++i)
            for (Eigen::Index j = 0; j < G.cols(); ++j)
              inside(t, j) += (G(i, j) > S(0) && G(i, j) < S(1)) ? S(1) : S(0);
        }
        return Sides<S>{inside, Mat<S>::Constant(alpha.rows(), d.sizes.V, S(int(d.sizes.K)))};
      })));
  const Source parallel{seed_002, "Gated Linear Attention Layer / Parallel form", ""};
  out.push_back(claim(
      "002.gla.parallel_state", parallel,
      R"(\boldsymbol{S}_t = \sum_{i=1}^t \left( \left( \prod_{j=i+1}^t \boldsymbol{\alpha}_j^\top \boldsymbol{1} \right) \odot \boldsymbol{k}_i^\top \boldsymbol{v}_i \right))",
      "S_t = sum_{i<=t} (prod_{j=i+1}^t alpha_j^T 1) (.) k_i^T v_i, every S_t",
      check_of([](auto &d) {
        using S = typename std::decay_t<decltype(d)>::Scalar;
        const Head<S> x = draw_head(d, d.sizes.K);
        const Mat<S> alpha = exp_of(x.g);
        std::vector<Mat<S>> states;
        for (Eigen::Index t = 0; t < x.q.rows(); ++t) {
          Mat<S> state = Mat<S>::Zero(x.k.cols(), x.v.cols());
          for (Eigen::Index i = 0; i <= t; ++i) {
            Mat<S> decay = Mat<S>::Ones(1, x.k.cols());
            for (Eigen::Index j = i + 1; j <= t; ++j)
              decay = decay.cwiseProduct(alpha.row(j));
            state += gate_times<S>(decay, Mat<S>(x.k.row(i).transpose() * x.v.row(i)));
          }
          states.push_back(state);
        }
        return sides_of(states, gla_states(x));
      })));
  out.push_back(claim(
      "002.gla.parallel_output_b", parallel,
      R"(\boldsymbol{o}_t = \boldsymbol{q}_t \boldsymbol{S}_t = \boldsymbol{q}_t \sum_{i=1}^t \left( \left( \frac{\boldsymbol{b}_t}{\boldsymbol{b}_i} \right)^\top \boldsymbol{1} \right))",
      "o_t = q_t sum_{i<=t} ((b_t / b_i)^T 1) (.) k_i^T v_i, b_t = prod_{j<=t} alpha_j",
      check_of([](auto &d) {
        using S = typename std::decay_t<decltype(d)>::Scalar;
        const Head<S> x = draw_head(d, d.sizes.K);
        const Mat<S> b = decay_b(x);
        Mat<S> o(x.q.rows(), x.v.cols());
        for (Eigen::Index t = 0; t < x.q.rows(); ++t) {
          Mat<S> state = Mat<S>::Zero(x.k.cols(), x.v.cols());
          for (Eigen::Index i = 0; i <= t; ++i)
            state += gate_times<S>(b.row(t).cwiseQuotient(b.row(i)),
                                   Mat<S>(x.k.row(i).transpose() * x.v.row(i)));
          o.row(t) = x.q.row(t) * state;
        }
        return Sides<S>{o, gla::recurrent_head(x, S(1)).o};
      })));
  out.push_back(claim(
      "002.gla.parallel_output_qb", parallel,
      R"(&= \sum_{i=1}^t (\boldsymbol{q}_t \odot \boldsymbol{b}_t) \left( \frac{\boldsymbol{k}_i}{\boldsymbol{b}_i} \right)^\top \boldsymbol{v}_i)",
      "o_t = sum_{i<=t} (q_t (.) b_t) (k_i / b_i)^T v_i", check_of([](auto &d) {
        using S = typename std::decay_t<decltype(d)>::Scalar;
        const Head<S> x = draw_head(d, d.sizes.K);
        const Mat<S> b = decay_b(x);
        Mat<S> o = Mat<S>::Zero(x.q.rows(), x.v.cols());
        for (Eigen::Index t = 0; t < x.q.rows(); ++t)
          for (Eigen::Index i = 0; i <= t; ++i)
            o.row(t) += x.q.row(t).cwiseProduct(b.row(t)).dot(x.k.row(i).cwiseQuotient(b.row(i))) *
                        x.v.row(i);
        return Sides<S>{o, gla::recurrent_head(x, S(1)).o};
      })));
  // The note never defines M: the causal mask with or without its diagonal.
  Claim matrix = claim(
      "002.gla.matrix_form", parallel,
      R"(\mathbf{O} = \left( \underbrace{(\mathbf{Q} \odot \mathbf{B}) \left( \frac{\mathbf{K}}{\mathbf{B}} \right)^\top}_{\mathbf{P}} \odot \mathbf{M} \right) \mathbf{V})",
      "O = (((Q (.) B)(K / B)^T) (.) M) V, M not defined in the note");
  for (const bool inclusive : {true, false})
    matrix.readings.push_back({inclusive ? "M_ij = 1 for i >= j" : "M_ij = 1 for i > j",
                               std::string("O = (((Q (.) B)(K / B)^T) (.) M) V, M_ij = 1 for i ") +
                                   (inclusive ? ">=" : ">") + " j, else 0",
                               check_of([inclusive](auto &d) {
                                 using S = typename std::decay_t<decltype(d)>::Scalar;
                                 const Head<S> x = draw_head(d, d.sizes.K);
                                 const Mat<S> B = decay_b(x);
                                 const Mat<S> P =
                                     x.q.cwiseProduct(B) * x.k.cwiseQuotient(B).transpose();
                                 const Mat<S> O =
                                     P.cwiseProduct(causal_mask<S>(P.rows(), inclusive)) * x.v;
                                 return Sides<S>{O, gla::recurrent_head(x, S(1)).o};
                               })});
  out.push_back(matrix);
  out.push_back(claim(
      "002.gla.log_space_scores", parallel,
      R"(\mathbf{P}_{ij} = \sum_{k=1}^d \mathbf{Q}_{ik} \mathbf{K}_{jk} \text{exp}(\log \mathbf{B}_{ik} - \log \mathbf{B}_{jk}), \quad i \geq j)",
      "P_ij = sum_k Q_ik K_jk exp(log B_ik - log B_jk) for i >= j; O = (P (.) M) V",
      check_of([](auto &d) {
        using S = typename std::decay_t<decltype(d)>::Scalar;
        using std::exp;
        const Head<S> x = draw_head(d, d.sizes.K);
        Mat<S> logB = x.g;
        for (Eigen::Index t = 1; t < logB.rows(); ++t)
          logB.row(t) += logB.row(t - 1);
        const Eigen::Index L = x.q.rows();
        Mat<S> P = Mat<S>::Zero(L, L);
        for (Eigen::Index i = 0; i < L; ++i)
          for (Eigen::Index j = 0; j <= i; ++j)
            for (Eigen::Index k = 0; k < x.q.cols(); ++k)
              P(i, j) += x.q(i, k) * x.k(j, k) * exp(S(logB(i, k) - logB(j, k)));
        return Sides<S>{Mat<S>(P * x.v), gla::recurrent_head(x, S(1)).o};
      })));
  out.push_back(claim(
      "002.gla.B_in_unit_interval", parallel, R"(Where $\mathbf{B} \in (0,1)^{L \times d}$)",
      "every entry of B (row t: b_t = prod_{j<=t} alpha_j) lies in (0, 1)", check_of([](auto &d) {
        using S = typename std::decay_t<decltype(d)>::Scalar;
        const Mat<S> B = cumulative_decay(d.log_gates(d.sizes.T, d.sizes.K));
        const Mat<S> inside =
            B.unaryExpr([](const S &b) { return (b > S(0) && b < S(1)) ? S(1) : S(0); });
        return Sides<S>{inside, Mat<S>::Ones(B.rows(), B.cols())};
      })));
  return out;
}

} // namespace

std::vector<Claim> seed_002_claims() {
  std::vector<Claim> out = linear_attention();
  for (Claim &c : gla_forms())
    out.push_back(std::move(c));
  return out;
}

} // namespace ruleproof::proofs::notes
