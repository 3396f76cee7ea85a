// ruleproof: the claims of seed 002 (linear attention and GLA: recurrent, parallel and
// log-space forms). The truth is the reference: linear_attn and gla's recurrent form.
#include "claims.hpp"
#include "common.hpp"
#include "reference/gla/layer.hpp"
#include "reference/linear_attn/linear_attn.hpp"

namespace ruleproof::proofs::notes {
namespace {

/// The reference's states S_1 ... S_T of gla.
template <class S> std::vector<Mat<S>> gla_states(const Head<S> &x) {
  return states_of(x, [](const Head<S> &y) { return gla::recurrent_head(y, S(1)); });
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
        using S = scalar_of<decltype(d)>;
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
        using S = scalar_of<decltype(d)>;
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
  // S_t in R^{d x d}, z_t in R^{d x 1}: the shapes of the reference's state [S | z], the
  // note's d the width of q, k and v; the note never gives W_V's width.
  {
    const std::string statement =
        "S_t in R^{d x d}, z_t in R^{d x 1}, d the width of the keys: the reference's state "
        "[S | z] of normalised linear attention has d rows, d columns of S and one of z";
    Claim c = claim(
        "002.linear_attn.state_shapes", {seed_002, "Linear attention / Recurrent form", ""},
        R"(&\boldsymbol{S}_t \in \mathbb{R}^{d \times d}, \boldsymbol{z}_t \in \mathbb{R}^{d \times 1})",
        statement + "; the width of v is not stated");
    for (const bool square : {true, false})
      c.readings.push_back(
          {square ? "v of width d (W_V square)" : "v of another width (W_V d x d_v, d_v != d)",
           statement, check_of([square](auto &d) {
             using S = scalar_of<decltype(d)>;
             const auto K = static_cast<Eigen::Index>(d.sizes.K);
             Head<S> x = draw_head(d, 0);
             x.q = d.positives(d.sizes.T, d.sizes.K), x.k = d.positives(d.sizes.T, d.sizes.K);
             x.v = d.values(d.sizes.T, static_cast<std::size_t>(square ? K : K + 1));
             const linear_attn::Variant var{true, linear_attn::FeatureMap::identity};
             x.h0 = Mat<S>::Zero(x.k.cols(), x.v.cols() + 1); // the state [S | z]
             const Mat<S> state = gla::recurrent_head(linear_attn::as_gla(x, var), S(1)).ht;
             Mat<S> shapes(1, 4), written(1, 4);
             shapes << S(int(state.rows())), S(int(state.cols() - 1)), S(int(state.rows())), S(1);
             written << S(int(K)), S(int(K)), S(int(K)), S(1);
             return Sides<S>{shapes, written};
           })});
    out.push_back(c);
  }
  out.push_back(claim(
      "002.linear_attn.simplification", {seed_002, "Linear attention / Simplification", ""},
      R"(\boldsymbol{S}_t = \boldsymbol{S}_{t-1} + \boldsymbol{k}_t^\top \boldsymbol{v}_t, \quad \boldsymbol{o}_t = \boldsymbol{q}_t \boldsymbol{S}_t)",
      "S_t = S_{t-1} + k_t^T v_t, o_t = q_t S_t (phi the identity, no normaliser)",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
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
        using S = scalar_of<decltype(d)>;
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
        using S = scalar_of<decltype(d)>;
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
        using S = scalar_of<decltype(d)>;
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
        using S = scalar_of<decltype(d)>;
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
        using S = scalar_of<decltype(d)>;
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
        using S = scalar_of<decltype(d)>;
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
                                 using S = scalar_of<decltype(d)>;
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
        using S = scalar_of<decltype(d)>;
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
  // The note's reason for the log-space form, in words: it prevents K/B from exploding.
  // Every factor exp(log B_ik - log B_jk) it multiplies, i >= j, lies in (0, 1] (B falls
  // along t), while the entries of K/B grow as 1/B: at a gate alpha, 1/B_t = alpha^-t.
  out.push_back(claim(
      "002.gla.log_space_prevents_overflow", parallel,
      R"(To prevent the explode of  $\frac{K}{B}$)",
      "in the log-space form every factor exp(log B_ik - log B_jk), i >= j, lies in (0, 1], so "
      "no intermediate exceeds |Q_ik K_jk|; the entries 1/B_jk of K/B are alpha-products "
      "inverted, at least 1 and growing with j",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        using std::exp;
        Mat<S> logB = d.log_gates(d.sizes.T, d.sizes.K); // row t: log b_t
        for (Eigen::Index t = 1; t < logB.rows(); ++t)
          logB.row(t) += logB.row(t - 1);
        const Eigen::Index L = logB.rows(), n = logB.cols();
        Mat<S> bounded = Mat<S>::Zero(1, 2), rhs = Mat<S>::Ones(1, 2);
        bool factors_in_unit = true, inverse_grows = true;
        for (Eigen::Index k = 0; k < n; ++k)
          for (Eigen::Index i = 0; i < L; ++i) {
            const S inverse = exp(S(-logB(i, k))); // 1/B_ik
            if (!(inverse >= S(1)) || (i > 0 && !(inverse > exp(S(-logB(i - 1, k))))))
              inverse_grows = false;
            for (Eigen::Index j = 0; j <= i; ++j) {
              const S factor = exp(S(logB(i, k) - logB(j, k)));
              if (!(factor > S(0) && factor <= S(1)))
                factors_in_unit = false;
            }
          }
        bounded << S(factors_in_unit ? 1 : 0), S(inverse_grows ? 1 : 0);
        return Sides<S>{bounded, rhs};
      })));
  out.push_back(claim(
      "002.gla.B_in_unit_interval", parallel, R"(Where $\mathbf{B} \in (0,1)^{L \times d}$)",
      "every entry of B (row t: b_t = prod_{j<=t} alpha_j) lies in (0, 1)", check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const Mat<S> B = cumulative_decay(d.log_gates(d.sizes.T, d.sizes.K));
        const Mat<S> inside =
            B.unaryExpr([](const S &b) { return (b > S(0) && b < S(1)) ? S(1) : S(0); });
        return Sides<S>{inside, Mat<S>::Ones(B.rows(), B.cols())};
      })));
  return out;
}

/// One batch of the multi-head layer and block: x [1, T, D] with D = K + 1, H = 2 heads of
/// K' = K keys and V' = V values, the core's recurrent form with scale 1 (the note has none),
/// LN without eps or affine part (the note's LN), SwiGLU of width F = D.
template <class S> struct LayerDraw {
  Tensor<S> x;
  gla::BlockParams<S> p;
  gla::BlockOptions opts;
};

template <class S> LayerDraw<S> draw_layer(Draw<S> &d) {
  const std::size_t T = d.sizes.T, K = d.sizes.K, V = d.sizes.V, H = 2, D = K + 1;
  LayerDraw<S> l;
  l.x = Tensor<S>({1, T, D});
  gla::put_batch_rows(l.x, d.values(T, D), 0);
  gla::LayerParams<S> &a = l.p.attn;
  a.heads = H;
  a.W_q = d.values(D, H * K), a.W_k = d.values(D, H * K), a.W_v = d.values(D, H * V);
  a.W_g = d.values(D, H * K), a.W_r = d.values(D, H * V), a.W_o = d.values(H * V, D);
  a.b_r = d.values(H * V, 1).col(0);
  l.p.W_1 = d.values(D, D), l.p.W_2 = d.values(D, D), l.p.W_3 = d.values(D, D);
  l.opts.layer.core.scale = 1.0;
  l.opts.layer.form = gla::core_form::recurrent;
  l.opts.layer.norm_eps = 0.0;
  return l;
}

/// LN of every row of a T x n matrix: (z - mean z) / sqrt(var z), the note's LN.
template <class S> Mat<S> layer_norm_rows(const Mat<S> &z) {
  return gla::normalize_rows<S>(z, gla::norm_kind::layer_norm, {}, S(0));
}

/// Swish of every entry.
template <class S> Mat<S> swish_of(const Mat<S> &z) {
  return z.unaryExpr([](const S &e) { return gla::swish(e); });
}

/// The note's SwiGLU(Z) = (Swish(Z W_1) (.) Z W_2) W_3.
template <class S> Mat<S> swiglu_as_written(const Mat<S> &Z, const gla::BlockParams<S> &p) {
  return swish_of<S>(Z * p.W_1).cwiseProduct(Z * p.W_2) * p.W_3;
}

std::vector<Claim> multi_head_layer() {
  const Source src{seed_002, "Multi-head GLA layer", ""};
  std::vector<Claim> out;
  out.push_back(claim(
      "002.layer.heads", src,
      R"(\boldsymbol{S}^h_t &= \left( (\boldsymbol{\alpha}^h_t)^\top \boldsymbol{1} \right) \odot \boldsymbol{S}^h_{t-1} + \boldsymbol{k}^{h \top}_t \boldsymbol{v}^h_t)",
      "S^h_t = ((alpha^h_t)^T 1) (.) S^h_{t-1} + k^h_t^T v^h_t, o^h_t = q^h_t S^h_t, each head "
      "its own K' x V' state, against the layer's core",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        using std::exp;
        const LayerDraw<S> l = draw_layer(d);
        const gla::LayerStages<S> st = gla::layer_stages(l.x, l.p.attn, l.opts.layer);
        const Inputs<S> &in = st.core_in;
        const std::size_t T = in.q.dim(1), H = in.q.dim(2), K = in.q.dim(3), V = in.v.dim(3);
        Mat<S> lhs(T, H * V), rhs(T, H * V);
        for (std::size_t h = 0; h < H; ++h) {
          Mat<S> state = Mat<S>::Zero(K, V);
          for (std::size_t t = 0; t < T; ++t) {
            Mat<S> q(1, K), k(1, K), alpha(1, K), v(1, V);
            for (std::size_t i = 0; i < K; ++i) {
              q(0, i) = in.q(0, t, h, i);
              k(0, i) = in.k(0, t, h, i);
              alpha(0, i) = exp(in.g(0, t, h, i)); // alpha^h_t = exp(g^h_t)
            }
            for (std::size_t j = 0; j < V; ++j)
              v(0, j) = in.v(0, t, h, j);
            state = gate_times<S>(alpha, state) + k.transpose() * v;
            const Mat<S> o = q * state;
            for (std::size_t j = 0; j < V; ++j)
              lhs(t, h * V + j) = o(0, j), rhs(t, h * V + j) = st.core.o(0, t, h, j);
          }
        }
        return Sides<S>{lhs, rhs};
      })));
  out.push_back(claim(
      "002.layer.output", src,
      R"(\boldsymbol{y}_t &= (\boldsymbol{r}_t \odot \boldsymbol{o}'_t) \boldsymbol{W}_O \in \mathbb{R}^{1 \times d})",
      "o'_t = concat(LN(o^1_t), ..., LN(o^H_t)), r_t = Swish(x_t W_r + b_r), y_t = (r_t (.) "
      "o'_t) W_O, against the layer",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const LayerDraw<S> l = draw_layer(d);
        const gla::LayerParams<S> &a = l.p.attn;
        const gla::LayerStages<S> st = gla::layer_stages(l.x, a, l.opts.layer);
        const std::size_t T = l.x.dim(1), H = a.heads, V = st.core.o.dim(3);
        Mat<S> concat(T, H * V); // o'_t
        for (std::size_t h = 0; h < H; ++h) {
          Mat<S> o(T, V);
          for (std::size_t t = 0; t < T; ++t)
            for (std::size_t j = 0; j < V; ++j)
              o(t, j) = st.core.o(0, t, h, j);
          concat.middleCols(h * V, V) = layer_norm_rows(o);
        }
        const Mat<S> x = gla::batch_rows(l.x, 0);
        Mat<S> r_logits = x * a.W_r;
        r_logits.rowwise() += a.b_r.transpose();
        const Mat<S> y = swish_of(r_logits).cwiseProduct(concat) * a.W_o;
        return Sides<S>{y, gla::batch_rows(st.y, 0)};
      })));
  // o^h_t = q^h_t S^h_t in R^{1 x d'_v}: each head's readout of its state, the state by the
  // head's recurrence, against the layer core's output of that head.
  out.push_back(claim(
      "002.layer.head_output", src,
      R"(\boldsymbol{o}^h_t &= \boldsymbol{q}^h_t \boldsymbol{S}^h_t \in \mathbb{R}^{1 \times d'_v})",
      "o^h_t = q^h_t S^h_t, a 1 x d'_v row, S^h_t the head's state after t (the reference's "
      "recurrence run to t), against the layer core's output of head h",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const LayerDraw<S> l = draw_layer(d);
        const gla::LayerStages<S> st = gla::layer_stages(l.x, l.p.attn, l.opts.layer);
        const Inputs<S> &in = st.core_in;
        const std::size_t T = in.q.dim(1), H = in.q.dim(2), K = in.q.dim(3), V = in.v.dim(3);
        Mat<S> lhs(T, H * V), rhs(T, H * V);
        for (std::size_t h = 0; h < H; ++h) {
          Head<S> x;
          x.q = Mat<S>(T, K), x.k = Mat<S>(T, K), x.g = Mat<S>(T, K), x.v = Mat<S>(T, V);
          for (std::size_t t = 0; t < T; ++t) {
            for (std::size_t i = 0; i < K; ++i)
              x.q(t, i) = in.q(0, t, h, i), x.k(t, i) = in.k(0, t, h, i),
                     x.g(t, i) = in.g(0, t, h, i);
            for (std::size_t j = 0; j < V; ++j)
              x.v(t, j) = in.v(0, t, h, j), rhs(t, h * V + j) = st.core.o(0, t, h, j);
          }
          x.h0 = Mat<S>::Zero(K, V);
          for (std::size_t t = 0; t < T; ++t) {
            const auto n = static_cast<Eigen::Index>(t + 1);
            Head<S> prefix = x;
            prefix.q = x.q.topRows(n), prefix.k = x.k.topRows(n), prefix.g = x.g.topRows(n);
            prefix.v = x.v.topRows(n);
            const Mat<S> state = gla::recurrent_head(prefix, S(1)).ht; // S^h_t, K' x V'
            const Mat<S> o = x.q.row(static_cast<Eigen::Index>(t)) * state;
            for (std::size_t j = 0; j < V; ++j)
              lhs(t, h * V + j) = o(0, static_cast<Eigen::Index>(j));
          }
        }
        return Sides<S>{lhs, rhs};
      })));
  // o'_t = concat(LN(o^1_t), ..., LN(o^H_t)): each head's output normalised, against the
  // layer's stage.
  out.push_back(claim(
      "002.layer.normalised_heads", src,
      R"(\boldsymbol{o}'_t &= \text{concat}(\text{LN}(\boldsymbol{o}^1_t), ..., \text{LN}(\boldsymbol{o}^H_t)))",
      "o'_t = concat(LN(o^1_t), ..., LN(o^H_t)), LN over each head's V' values, against the "
      "layer's normalised heads",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const LayerDraw<S> l = draw_layer(d);
        const gla::LayerStages<S> st = gla::layer_stages(l.x, l.p.attn, l.opts.layer);
        const std::size_t T = l.x.dim(1), H = l.p.attn.heads, V = st.core.o.dim(3);
        Mat<S> lhs(T, H * V), rhs(T, H * V);
        for (std::size_t h = 0; h < H; ++h) {
          Mat<S> o(T, V);
          for (std::size_t t = 0; t < T; ++t)
            for (std::size_t j = 0; j < V; ++j)
              o(t, j) = st.core.o(0, t, h, j), rhs(t, h * V + j) = st.o_norm(0, t, h, j);
          lhs.middleCols(h * V, V) = layer_norm_rows(o);
        }
        return Sides<S>{lhs, rhs};
      })));
  // r_t = Swish(x_t W_r + b_r): the output gate, against the layer's stage.
  out.push_back(claim(
      "002.layer.output_gate", src,
      R"(\boldsymbol{r}_t &= \text{Swish}(\boldsymbol{x}_t \boldsymbol{W}_r + \boldsymbol{b}_r))",
      "r_t = Swish(x_t W_r + b_r), against the layer's output gate", check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const LayerDraw<S> l = draw_layer(d);
        const gla::LayerStages<S> st = gla::layer_stages(l.x, l.p.attn, l.opts.layer);
        Mat<S> logits = gla::batch_rows(l.x, 0) * l.p.attn.W_r;
        logits.rowwise() += l.p.attn.b_r.transpose();
        return Sides<S>{swish_of(logits), gla::batch_rows(st.r, 0)};
      })));
  for (Claim &c : out)
    c.sizes = {4, 2, 2, 1}, c.min_sizes = {1, 1, 2, 1}; // LN needs two values a head
  return out;
}

std::vector<Claim> gla_block() {
  const Source src{seed_002, "GLA block", ""};
  std::vector<Claim> out;
  out.push_back(claim(
      "002.block.swiglu", src,
      R"(\text{SwiGLU}(\mathbf{Z}) = (\text{Swish}(\mathbf{Z} \mathbf{W}_1) \odot \mathbf{Z} \mathbf{W}_2) \mathbf{W}_3)",
      "SwiGLU(Z) = (Swish(Z W_1) (.) Z W_2) W_3, against the reference's gated MLP",
      check_of([](auto &d) {
        using S = scalar_of<decltype(d)>;
        const LayerDraw<S> l = draw_layer(d);
        const Mat<S> Z = gla::batch_rows(l.x, 0);
        const gla::SwigluStages<S> mlp = gla::swiglu(l.x, l.p.W_1, l.p.W_2, l.p.W_3);
        return Sides<S>{swiglu_as_written(Z, l.p), gla::batch_rows(mlp.out, 0)};
      })));
  out.push_back(
      claim("002.block.attention_residual", src,
            R"(\mathbf{Y}^{(l)} &= \text{GLA}(\text{LN}(\mathbf{X}^{(l)})) + \mathbf{X}^{(l)})",
            "Y = GLA(LN(X)) + X, against the block's first half", check_of([](auto &d) {
              using S = scalar_of<decltype(d)>;
              const LayerDraw<S> l = draw_layer(d);
              const Mat<S> X = gla::batch_rows(l.x, 0);
              Tensor<S> x_norm(l.x.shape());
              gla::put_batch_rows(x_norm, layer_norm_rows(X), 0);
              const Mat<S> Y = gla::batch_rows(gla::layer(x_norm, l.p.attn, l.opts.layer).y, 0) + X;
              return Sides<S>{Y, gla::batch_rows(gla::block_stages(l.x, l.p, l.opts).y, 0)};
            })));
  // The second residual: the note adds X; a pre-norm block (flash-linear-attention's
  // GLABlock) adds Y, so the attention's output stays in the residual stream.
  const auto mlp_residual = [](bool adds_x) {
    return check_of([adds_x](auto &d) {
      using S = scalar_of<decltype(d)>;
      LayerDraw<S> l = draw_layer(d);
      const Mat<S> X = gla::batch_rows(l.x, 0);
      const Mat<S> Y = gla::batch_rows(gla::block_stages(l.x, l.p, l.opts).y, 0);
      const Mat<S> next = swiglu_as_written(layer_norm_rows(Y), l.p) + (adds_x ? X : Y);
      l.opts.residual = gla::block_residual::y;
      return Sides<S>{next, gla::batch_rows(gla::block(l.x, l.p, l.opts).y, 0)};
    });
  };
  const std::string quote =
      R"(\mathbf{X}^{(l+1)} &= \text{SwiGLU}(\text{LN}(\mathbf{Y}^{(l)})) + \mathbf{X}^{(l)})";
  out.push_back(claim("002.block.mlp_residual", src, quote,
                      "X^(l+1) = SwiGLU(LN(Y)) + X^(l) is the pre-norm GLA block "
                      "(flash-linear-attention's GLABlock adds the residual Y)",
                      mlp_residual(true)));
  out.push_back(correction("002.block.mlp_residual_y", out.back(),
                           "X^(l+1) = SwiGLU(LN(Y)) + Y^(l): the residual of the second half is Y",
                           mlp_residual(false)));
  for (Claim &c : out)
    c.sizes = {4, 2, 2, 1}, c.min_sizes = {1, 1, 2, 1};
  return out;
}

} // namespace

std::vector<Claim> seed_002_claims() {
  std::vector<Claim> out = linear_attention();
  for (auto part : {gla_forms, multi_head_layer, gla_block})
    for (Claim &c : part())
      out.push_back(std::move(c));
  return out;
}

} // namespace ruleproof::proofs::notes
