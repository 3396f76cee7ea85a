// ruleproof: linear_attn, plain and normalised (seed 002, "Linear attention"), with a
// feature map phi on q and k. Plain: S_t = S_{t-1} + phi(k_t) v_t^T, o_t = S_t^T phi~(q_t).
// Normalised: z_t = z_{t-1} + phi(k_t), o_t = S_t^T phi~(q_t) / (phi~(q_t)^T z_t); the state
// is [S | z], K x (V + 1), so its initial and final states carry z in the last column.
// Every form is gla's with no decay (g = 0), on values [v | 1] when normalised.
#pragma once

#include "../gla/gla.hpp"
#include "features.hpp"
#include "rule.hpp"

namespace ruleproof::linear_attn {

template <Scalar S>
Output<S> recurrent(const Inputs<S> &in, const Options &opts, const Variant &var) {
  return forward_heads(in, opts, signature_of(var), [&](const Head<S> &x, const S &scale) {
    return normalise(gla::recurrent_head(as_gla(x, var), scale), var);
  });
}

template <Scalar S>
Output<S> parallel(const Inputs<S> &in, const Options &opts, const Variant &var) {
  return forward_heads(in, opts, signature_of(var), [&](const Head<S> &x, const S &scale) {
    return normalise(gla::parallel_head(as_gla(x, var), scale), var);
  });
}

template <Scalar S> Output<S> chunk(const Inputs<S> &in, const Options &opts, const Variant &var) {
  return forward_heads(in, opts, signature_of(var), [&](const Head<S> &x, const S &scale) {
    return normalise(gla::chunk_head(as_gla(x, var), scale, opts.chunk_size), var);
  });
}

/// Through the quotient: d numerator = dO / den, d den = -sum_j dO_j num_j / den^2; then
/// gla's backward on [v | 1], then phi' on q and k.
template <Scalar S>
Grads<S> chunk_backward(const Inputs<S> &in, const Cotangents<S> &ct, const Options &opts,
                        const Variant &var) {
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
