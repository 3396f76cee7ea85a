// ruleproof: linear_attn's feature maps, and the head as gla sees it (linear_attn.hpp's
// forms run gla's on it).
#pragma once

#include "../core/heads.hpp"
#include "rule.hpp"

namespace ruleproof::linear_attn {

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

} // namespace ruleproof::linear_attn
