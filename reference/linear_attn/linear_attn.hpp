// ruleproof: linear_attn, plain and normalised (seed 002, "Linear attention"), with a
// feature map phi on q and k. Plain: S_t = S_{t-1} + phi(k_t) v_t^T, o_t = S_t^T phi~(q_t).
// Normalised: z_t = z_{t-1} + phi(k_t), o_t = S_t^T phi~(q_t) / (phi~(q_t)^T z_t); the state
// is [S | z], K x (V + 1), so its initial and final states carry z in the last column.
// Every form is gla's with no decay (g = 0), on values [v | 1] when normalised.
#pragma once

#include <string>

#include "../gla/gla.hpp"

namespace ruleproof::linear_attn {

enum class FeatureMap { identity, elu_plus_one, relu };

inline std::string name_of(FeatureMap map) {
  switch (map) {
  case FeatureMap::identity: return "identity";
  case FeatureMap::elu_plus_one: return "elu+1";
  case FeatureMap::relu: return "relu";
  }
  return "?";
}

struct Variant {
  bool normalised = false;
  FeatureMap map = FeatureMap::identity;
};

inline Signature signature_of(const Variant &var) {
  return {GateKind::none, false, 0.0, 1.0, var.normalised ? 1u : 0u};
}

/// phi(x): identity, elu(x) + 1, or max(x, 0).
template <Scalar S> S feature(FeatureMap map, const S &x) {
  using std::exp;
  switch (map) {
  case FeatureMap::identity: return x;
  case FeatureMap::elu_plus_one: return x > S(0) ? S(x + S(1)) : S(exp(x));
  case FeatureMap::relu: return x > S(0) ? x : S(0);
  }
  return x;
}

/// phi'(x), for the chain rule.
template <Scalar S> S feature_slope(FeatureMap map, const S &x) {
  using std::exp;
  switch (map) {
  case FeatureMap::identity: return S(1);
  case FeatureMap::elu_plus_one: return x > S(0) ? S(1) : S(exp(x));
  case FeatureMap::relu: return x > S(0) ? S(1) : S(0);
  }
  return S(1);
}

/// The head as gla sees it: phi(q), phi(k), no decay, and [v | 1] when normalised.
template <Scalar S> Head<S> as_gla(Head<S> x, const Variant &var) {
  const auto phi = [&](const S &e) { return feature(var.map, e); };
  x.q = x.q.unaryExpr(phi).eval();
  x.k = x.k.unaryExpr(phi).eval();
  x.g = Mat<S>::Zero(x.q.rows(), x.q.cols());
  if (var.normalised) {
    Mat<S> v1(x.v.rows(), x.v.cols() + 1);
    v1 << x.v, Mat<S>::Ones(x.v.rows(), 1);
    x.v = v1;
  }
  return x;
}

/// o = numerator / denominator, the last column of gla's output on [v | 1].
template <Scalar S> HeadOutput<S> normalise(HeadOutput<S> r, const Variant &var) {
  if (var.normalised) {
    const Eigen::Index V = r.o.cols() - 1;
    r.o = (r.o.leftCols(V).array().colwise() / r.o.col(V).array()).matrix().eval();
  }
  return r;
}

template <Scalar S>
Output<S> recurrent(const Inputs<S> &in, const Options &opts, const Variant &var = {}) {
  return forward_heads(in, opts, signature_of(var), [&](const Head<S> &x, const S &scale) {
    return normalise(gla::recurrent_head(as_gla(x, var), scale), var);
  });
}

template <Scalar S>
Output<S> parallel(const Inputs<S> &in, const Options &opts, const Variant &var = {}) {
  return forward_heads(in, opts, signature_of(var), [&](const Head<S> &x, const S &scale) {
    return normalise(gla::parallel_head(as_gla(x, var), scale), var);
  });
}

template <Scalar S>
Output<S> chunk(const Inputs<S> &in, const Options &opts, const Variant &var = {}) {
  return forward_heads(in, opts, signature_of(var), [&](const Head<S> &x, const S &scale) {
    return normalise(gla::chunk_head(as_gla(x, var), scale, opts.chunk_size), var);
  });
}

/// Through the quotient: d numerator = dO / den, d den = -sum_j dO_j num_j / den^2; then
/// gla's backward on [v | 1], then phi' on q and k.
template <Scalar S>
Grads<S> chunk_backward(const Inputs<S> &in, const Cotangents<S> &ct, const Options &opts,
                        const Variant &var = {}) {
  return backward_heads(in, ct, opts, signature_of(var),
                        [&](const Head<S> &x, const HeadCotangent<S> &c, const S &scale) {
                          const Head<S> y = as_gla(x, var);
                          HeadCotangent<S> cy = c;
                          if (var.normalised) {
                            const Mat<S> num_den = gla::chunk_head(y, scale, opts.chunk_size).o;
                            const Eigen::Index V = x.v.cols();
                            const auto den = num_den.col(V).array();
                            cy.d_o = Mat<S>(x.v.rows(), V + 1);
                            cy.d_o.leftCols(V) = (c.d_o.array().colwise() / den).matrix();
                            cy.d_o.col(V) =
                                -(c.d_o.cwiseProduct(num_den.leftCols(V)).rowwise().sum().array() /
                                  (den * den))
                                     .matrix();
                          }
                          HeadGrads<S> d = gla::chunk_backward_head(y, cy, scale, opts.chunk_size);
                          const auto slope = [&](const S &e) { return feature_slope(var.map, e); };
                          d.dq = d.dq.cwiseProduct(x.q.unaryExpr(slope)).eval();
                          d.dk = d.dk.cwiseProduct(x.k.unaryExpr(slope)).eval();
                          d.dv = d.dv.leftCols(x.v.cols()).eval();
                          d.dg = Mat<S>(x.q.rows(), 0);
                          return d;
                        });
}

} // namespace ruleproof::linear_attn
