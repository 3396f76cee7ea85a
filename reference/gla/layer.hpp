// ruleproof: seed 002's multi-head GLA layer and GLA block, on [B, T, D] tensors, with the
// GLA core computed by any of gla's forms (recurrent, parallel, chunkwise).
//
// Seed 002, "Multi-head GLA layer" (row vectors, as the seed writes them):
//   q_t, k_t, v_t = x_t W_Q, x_t W_K, x_t W_V, cut into H heads of K' and V' features,
//   S^h_t = Diag(alpha^h_t) S^h_{t-1} + k^h_t^T v^h_t,  o^h_t = q^h_t S^h_t,
//   o'_t = concat(LN(o^1_t), ..., LN(o^H_t)),  r_t = Swish(x_t W_r + b_r),
//   y_t = (r_t . o'_t) W_O.
// In the [K, V] layout of DESIGN.md the state is the same matrix and o^h_t = S^h_t^T q~^h_t
// with q~ = scale q (scale defaults to K'^-1/2, as in flash-linear-attention; the seed has
// none: set Options::scale = 1 for the seed's literal form).
//
// The seed leaves the gate's parameterisation open; here, as flash-linear-attention's GLA,
//   g_t = log-sigmoid(x_t W_g + b_g) / tau,  alpha_t = exp(g_t),
// with tau > 0 (its gate_logit_normalizer, default 16), so g <= 0 and alpha in (0, 1).
//
// Seed 002, "GLA block":
//   Y = GLA(LN(X)) + X,  X' = SwiGLU(LN(Y)) + R,  SwiGLU(Z) = (Swish(Z W_1) . Z W_2) W_3,
// where the seed writes R = X (block_residual::seed_as_written); the usual pre-norm block
// (flash-linear-attention's GLABlock, LLaMA) adds R = Y (block_residual::y).
#pragma once

#include <string>

#include "../rule_id.hpp"
#include "gla.hpp"

namespace ruleproof::gla {

/// Which normalisation, over the last axis of a row z of n features.
enum class norm_kind {
  none,       ///< z unchanged
  layer_norm, ///< (z - mean(z)) / sqrt(var(z) + eps) . w + b, var the biased variance
  rms_norm,   ///< z / sqrt(mean(z^2) + eps) . w + b
};

/// Which residual the block's second line adds (see the top of this file).
enum class block_residual {
  seed_as_written, ///< X' = SwiGLU(LN(Y)) + X, seed 002 as written
  y,               ///< X' = SwiGLU(LN(Y)) + Y, the usual pre-norm block
};

/// Which form of gla computes the core: the registry's Form (reference/rule_id.hpp).
using core_form = Form;

/// \brief Weights of one normalisation: w and b of length n; empty means w = 1, b = 0
/// (no affine part).
template <class S> struct NormWeights { Vec<S> weight, bias; };

/// \brief The parameters of the multi-head GLA layer, row-vector convention (x W).
/// D model width, H heads, K' = W_q.cols() / H, V' = W_v.cols() / H.
template <class S> struct LayerParams {
  std::size_t heads = 1;
  Mat<S> W_q, W_k;          ///< D x H K'
  Mat<S> W_v;               ///< D x H V'
  Mat<S> W_g;               ///< D x H K', the gate projection
  Vec<S> b_g;               ///< H K'; empty means 0
  Mat<S> W_r;               ///< D x H V', the output gate projection
  Vec<S> b_r;               ///< H V'; empty means 0
  Mat<S> W_o;               ///< H V' x D
  NormWeights<S> head_norm; ///< length V', shared by the heads (as flash-linear-attention's)
};

/// \brief What is not a weight: the core's options, its form, the gate's tau, the norms.
struct LayerOptions {
  Options core;                                ///< scale, chunk_size, cu_seqlens, threads
  core_form form = core_form::chunk;           ///< which gla form computes the core
  double gate_normalizer = 16.0;               ///< tau in g = log-sigmoid(x W_g + b_g) / tau, > 0
  norm_kind head_norm = norm_kind::layer_norm; ///< LN of o'_t, per head over its V' values
  double norm_eps = 1e-5;                      ///< eps in every normalisation's sqrt(. + eps)
  bool output_gate = true;                     ///< r_t = Swish(x_t W_r + b_r); false: r_t = 1
};

/// \brief The GLA block's parameters: the layer, two norms of width D, SwiGLU's weights.
template <class S> struct BlockParams {
  LayerParams<S> attn;
  NormWeights<S> attn_norm; ///< LN before the layer, length D
  NormWeights<S> mlp_norm;  ///< LN before SwiGLU, length D
  Mat<S> W_1, W_2;          ///< D x F
  Mat<S> W_3;               ///< F x D
};

struct BlockOptions {
  LayerOptions layer;
  norm_kind block_norm = norm_kind::layer_norm; ///< the two LNs of the block
  block_residual residual = block_residual::seed_as_written;
};

/// \brief What the layer computed, stage by stage (names as in seed 002).
template <class S> struct LayerStages {
  Inputs<S> core_in; ///< q, k, v [B, T, H, K'|V'], g [B, T, H, K'] (g = logsigmoid(.)/tau)
  Output<S> core;    ///< o [B, T, H, V'] and the final state [N, H, K', V']
  Tensor<S> o_norm;  ///< o' [B, T, H, V'], each head normalised
  Tensor<S> r;       ///< [B, T, H V'], the output gate (ones when off)
  Tensor<S> y;       ///< [B, T, D]
};

template <class S> struct BlockStages {
  Tensor<S> x_norm;     ///< LN(X) [B, T, D]
  LayerStages<S> layer; ///< GLA(LN(X))
  Tensor<S> y;          ///< Y = GLA(LN(X)) + X
  Tensor<S> y_norm;     ///< LN(Y)
  Tensor<S> swish_gate; ///< Swish(LN(Y) W_1) [B, T, F]
  Tensor<S> up;         ///< LN(Y) W_2 [B, T, F]
  Tensor<S> out;        ///< X' [B, T, D]
};

/// \brief Swish (SiLU): \f$ z \sigma(z) = z / (1 + e^{-z}) \f$.
template <Scalar S> S swish(const S &z) {
  using std::exp;
  return z / (S(1) + exp(-z)); // seed 002, Swish
}

/// \brief \f$ \log \sigma(z) = \min(z, 0) - \log(1 + e^{-|z|}) \f$, never positive, no
/// overflow for large |z|.
template <Scalar S> S log_sigmoid(const S &z) {
  using std::abs;
  using std::exp;
  using std::log;
  const S low = z < S(0) ? z : S(0);
  return low - log(S(1) + exp(-abs(z)));
}

/// Rows of batch b of a [B, T, D] tensor, as a T x D matrix.
template <class S> Mat<S> batch_rows(const Tensor<S> &x, std::size_t b) {
  const std::size_t T = x.dim(1), D = x.dim(2);
  Mat<S> m(T, D);
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t d = 0; d < D; ++d)
      m(t, d) = x(b, t, d);
  return m;
}

/// Writes a T x D matrix as batch b of a [B, T, D] tensor (batch_rows' inverse).
template <class S> void put_batch_rows(Tensor<S> &x, const Mat<S> &m, std::size_t b) {
  for (std::size_t t = 0; t < x.dim(1); ++t)
    for (std::size_t d = 0; d < x.dim(2); ++d)
      x(b, t, d) = m(t, d);
}

/// Adds the bias row vector to every row; an empty bias adds nothing.
template <class S> Mat<S> add_bias(Mat<S> m, const Vec<S> &bias) {
  if (bias.size() > 0)
    m.rowwise() += bias.transpose();
  return m;
}

namespace detail {

/// Columns [h n, (h + 1) n) of row t of m into x(b, t, h, :) of a [B, T, H, n] tensor.
template <class S> void put_heads(Tensor<S> &x, const Mat<S> &m, std::size_t b) {
  const std::size_t H = x.dim(2), n = x.dim(3);
  for (std::size_t t = 0; t < x.dim(1); ++t)
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t c = 0; c < n; ++c)
        x(b, t, h, c) = m(t, h * n + c);
}

template <class S>
void expect_dims(const std::string &name, const Mat<S> &m, Eigen::Index rows, Eigen::Index cols) {
  if (m.rows() != rows || m.cols() != cols)
    throw InputError(name, "is " + std::to_string(m.rows()) + " x " + std::to_string(m.cols()) +
                               ", expected " + std::to_string(rows) + " x " + std::to_string(cols));
}

template <class S> void expect_length(const std::string &name, const Vec<S> &v, Eigen::Index n) {
  if (v.size() != 0 && v.size() != n)
    throw InputError(name, "has length " + std::to_string(v.size()) + ", expected " +
                               std::to_string(n) + " (or empty)");
}

} // namespace detail

/// \brief Normalises one row z of n features (norm_kind says how); w, b empty: no affine.
template <Scalar S>
Vec<S> normalize(const Vec<S> &z, norm_kind kind, const NormWeights<S> &wb, const S &eps) {
  using std::sqrt;
  const Eigen::Index n = z.size();
  if (kind == norm_kind::none || n == 0)
    return z;
  Vec<S> centred = z;
  if (kind == norm_kind::layer_norm) {
    S mean(0);
    for (Eigen::Index i = 0; i < n; ++i)
      mean += z(i);
    mean /= S(static_cast<int>(n));
    for (Eigen::Index i = 0; i < n; ++i)
      centred(i) = z(i) - mean; // z - mean(z)
  }
  S power(0);
  for (Eigen::Index i = 0; i < n; ++i)
    power += centred(i) * centred(i);
  const S inv_sd = S(1) / sqrt(power / S(static_cast<int>(n)) + eps); // 1 / sqrt(var + eps)
  Vec<S> out(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    out(i) = centred(i) * inv_sd;
    if (wb.weight.size() > 0)
      out(i) *= wb.weight(i);
    if (wb.bias.size() > 0)
      out(i) += wb.bias(i);
  }
  return out;
}

/// Normalises every row of a matrix.
template <Scalar S>
Mat<S> normalize_rows(const Mat<S> &z, norm_kind kind, const NormWeights<S> &wb, const S &eps) {
  Mat<S> out(z.rows(), z.cols());
  for (Eigen::Index t = 0; t < z.rows(); ++t)
    out.row(t) = normalize<S>(Vec<S>(z.row(t).transpose()), kind, wb, eps).transpose();
  return out;
}

/// Normalises every [.., n] row of a tensor over its last axis.
template <Scalar S>
Tensor<S> normalize_last_axis(const Tensor<S> &x, norm_kind kind, const NormWeights<S> &wb,
                              const S &eps) {
  const std::size_t n = x.dim(x.rank() - 1);
  Tensor<S> out(x.shape());
  Vec<S> row(n);
  for (std::size_t base = 0; base < x.size(); base += n) {
    for (std::size_t i = 0; i < n; ++i)
      row(i) = x[base + i];
    const Vec<S> z = normalize<S>(row, kind, wb, eps);
    for (std::size_t i = 0; i < n; ++i)
      out[base + i] = z(i);
  }
  return out;
}

/// Runs the GLA core on [B, T, H, .] inputs in the chosen form.
template <Scalar S> Output<S> run_core(const Inputs<S> &in, const Options &opts, core_form form) {
  switch (form) {
  case core_form::recurrent: return recurrent(in, opts);
  case core_form::parallel: return parallel(in, opts);
  case core_form::chunk: break;
  }
  return chunk(in, opts);
}

/// \brief Checks the layer's weights against x [B, T, D]: throws InputError naming the
/// weight that does not fit.
template <Scalar S>
void validate_layer(const Tensor<S> &x, const LayerParams<S> &p, const LayerOptions &opts) {
  if (x.rank() != 3)
    throw InputError("x", "rank " + std::to_string(x.rank()) + ", expected [B, T, D]");
  const Eigen::Index D = static_cast<Eigen::Index>(x.dim(2));
  const Eigen::Index H = static_cast<Eigen::Index>(p.heads);
  if (H == 0 || p.W_q.cols() % H != 0 || p.W_v.cols() % H != 0 || p.W_q.cols() == 0 ||
      p.W_v.cols() == 0)
    throw InputError("heads", "must be >= 1 and divide the columns of W_q and W_v");
  const Eigen::Index HK = p.W_q.cols(), HV = p.W_v.cols();
  detail::expect_dims("W_q", p.W_q, D, HK);
  detail::expect_dims("W_k", p.W_k, D, HK);
  detail::expect_dims("W_v", p.W_v, D, HV);
  detail::expect_dims("W_g", p.W_g, D, HK);
  detail::expect_length("b_g", p.b_g, HK);
  if (opts.output_gate) {
    detail::expect_dims("W_r", p.W_r, D, HV);
    detail::expect_length("b_r", p.b_r, HV);
  }
  detail::expect_dims("W_o", p.W_o, HV, D);
  detail::expect_length("head_norm.weight", p.head_norm.weight, HV / H);
  detail::expect_length("head_norm.bias", p.head_norm.bias, HV / H);
  if (!(opts.gate_normalizer > 0))
    throw InputError("gate_normalizer", "tau must be > 0 so that g <= 0");
  if (!(opts.norm_eps >= 0))
    throw InputError("norm_eps", "must be >= 0");
}

/// \brief The multi-head GLA layer of seed 002, every stage kept. x is [B, T, D]; h0, if
/// given, the core's initial state [N, H, K', V'].
template <Scalar S>
LayerStages<S> layer_stages(const Tensor<S> &x, const LayerParams<S> &p, const LayerOptions &opts,
                            const Tensor<S> &h0 = Tensor<S>()) {
  validate_layer(x, p, opts);
  const std::size_t B = x.dim(0), T = x.dim(1), D = x.dim(2), H = p.heads;
  const std::size_t K = p.W_q.cols() / H, V = p.W_v.cols() / H;
  const S tau = from_double<S>(opts.gate_normalizer), eps = from_double<S>(opts.norm_eps);
  LayerStages<S> st;
  Inputs<S> &in = st.core_in;
  in.q = Tensor<S>({B, T, H, K});
  in.k = Tensor<S>({B, T, H, K});
  in.v = Tensor<S>({B, T, H, V});
  in.g = Tensor<S>({B, T, H, K});
  in.h0 = h0;
  st.r = Tensor<S>({B, T, H * V}, S(1));
  for (std::size_t b = 0; b < B; ++b) {
    const Mat<S> xb = batch_rows(x, b);
    detail::put_heads(in.q, Mat<S>(xb * p.W_q), b); // seed 002, q_t = x_t W_Q
    detail::put_heads(in.k, Mat<S>(xb * p.W_k), b); // seed 002, k_t = x_t W_K
    detail::put_heads(in.v, Mat<S>(xb * p.W_v), b); // seed 002, v_t = x_t W_V
    const Mat<S> gate_logits = add_bias(Mat<S>(xb * p.W_g), p.b_g);
    detail::put_heads(in.g, Mat<S>(gate_logits.unaryExpr([&](const S &z) {
                        return S(log_sigmoid(z) / tau); // g_t = log-sigmoid(x_t W_g + b_g) / tau
                      })),
                      b);
    if (opts.output_gate) {
      const Mat<S> r_logits = add_bias(Mat<S>(xb * p.W_r), p.b_r);
      put_batch_rows(st.r, Mat<S>(r_logits.unaryExpr([](const S &z) {
                       return swish(z); // seed 002, r_t = Swish(x_t W_r + b_r)
                     })),
                     b);
    }
  }
  st.core = run_core(in, opts.core, opts.form); // seed 002, S^h_t and o^h_t per head
  st.o_norm = normalize_last_axis(st.core.o, opts.head_norm, p.head_norm, eps); // LN(o^h_t)
  st.y = Tensor<S>({B, T, D});
  for (std::size_t b = 0; b < B; ++b) {
    Mat<S> gated(T, H * V); // r_t . o'_t, o'_t = concat_h LN(o^h_t)
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t h = 0; h < H; ++h)
        for (std::size_t c = 0; c < V; ++c)
          gated(t, h * V + c) = st.r(b, t, h * V + c) * st.o_norm(b, t, h, c);
    put_batch_rows(st.y, Mat<S>(gated * p.W_o), b); // seed 002, y_t = (r_t . o'_t) W_O
  }
  return st;
}

/// \brief The layer's output y [B, T, D] and the core's final state [N, H, K', V'].
template <class S> struct LayerOutput {
  Tensor<S> y;
  Tensor<S> final_state;
};

template <Scalar S>
LayerOutput<S> layer(const Tensor<S> &x, const LayerParams<S> &p, const LayerOptions &opts,
                     const Tensor<S> &h0 = Tensor<S>()) {
  LayerStages<S> st = layer_stages(x, p, opts, h0);
  return {std::move(st.y), std::move(st.core.final_state)};
}

/// \brief SwiGLU of seed 002 on a [B, T, D] tensor: \f$ (\mathrm{Swish}(Z W_1) \odot Z W_2)
/// W_3 \f$; also returns Swish(Z W_1) and Z W_2.
template <Scalar S> struct SwigluStages { Tensor<S> swish_gate, up, out; };

template <Scalar S>
SwigluStages<S> swiglu(const Tensor<S> &z, const Mat<S> &W_1, const Mat<S> &W_2,
                       const Mat<S> &W_3) {
  const std::size_t B = z.dim(0), T = z.dim(1), D = z.dim(2), F = W_1.cols();
  detail::expect_dims("W_1", W_1, D, F);
  detail::expect_dims("W_2", W_2, D, F);
  detail::expect_dims("W_3", W_3, F, D);
  SwigluStages<S> st{Tensor<S>({B, T, F}), Tensor<S>({B, T, F}), Tensor<S>({B, T, D})};
  for (std::size_t b = 0; b < B; ++b) {
    const Mat<S> zb = batch_rows(z, b);
    const Mat<S> gate = Mat<S>(zb * W_1).unaryExpr([](const S &e) { return swish(e); });
    const Mat<S> up = zb * W_2;
    put_batch_rows(st.swish_gate, gate, b);
    put_batch_rows(st.up, up, b);
    put_batch_rows(st.out, Mat<S>(gate.cwiseProduct(up) * W_3), b); // seed 002, SwiGLU
  }
  return st;
}

/// Element-wise a + b of two tensors of one shape.
template <Scalar S> Tensor<S> plus(const Tensor<S> &a, const Tensor<S> &b) {
  Tensor<S> out(a.shape());
  for (std::size_t i = 0; i < a.size(); ++i)
    out[i] = a[i] + b[i];
  return out;
}

/// \brief The GLA block of seed 002, every stage kept:
/// \f$ Y = \mathrm{GLA}(\mathrm{LN}(X)) + X \f$, \f$ X' = \mathrm{SwiGLU}(\mathrm{LN}(Y)) + R
/// \f$ with R = X (block_residual::seed_as_written) or R = Y (block_residual::y).
template <Scalar S>
BlockStages<S> block_stages(const Tensor<S> &x, const BlockParams<S> &p, const BlockOptions &opts,
                            const Tensor<S> &h0 = Tensor<S>()) {
  validate_layer(x, p.attn, opts.layer);
  const Eigen::Index D = static_cast<Eigen::Index>(x.dim(2));
  detail::expect_length("attn_norm.weight", p.attn_norm.weight, D);
  detail::expect_length("attn_norm.bias", p.attn_norm.bias, D);
  detail::expect_length("mlp_norm.weight", p.mlp_norm.weight, D);
  detail::expect_length("mlp_norm.bias", p.mlp_norm.bias, D);
  const S eps = from_double<S>(opts.layer.norm_eps);
  BlockStages<S> st;
  st.x_norm = normalize_last_axis(x, opts.block_norm, p.attn_norm, eps); // LN(X)
  st.layer = layer_stages(st.x_norm, p.attn, opts.layer, h0);
  st.y = plus(st.layer.y, x); // seed 002, Y = GLA(LN(X)) + X
  st.y_norm = normalize_last_axis(st.y, opts.block_norm, p.mlp_norm, eps); // LN(Y)
  SwigluStages<S> mlp = swiglu(st.y_norm, p.W_1, p.W_2, p.W_3);
  st.swish_gate = std::move(mlp.swish_gate);
  st.up = std::move(mlp.up);
  // seed 002, X' = SwiGLU(LN(Y)) + X as written; + Y in the usual block
  st.out = plus(mlp.out, opts.residual == block_residual::seed_as_written ? x : st.y);
  return st;
}

template <Scalar S>
LayerOutput<S> block(const Tensor<S> &x, const BlockParams<S> &p, const BlockOptions &opts,
                     const Tensor<S> &h0 = Tensor<S>()) {
  BlockStages<S> st = block_stages(x, p, opts, h0);
  return {std::move(st.out), std::move(st.layer.core.final_state)};
}

} // namespace ruleproof::gla
