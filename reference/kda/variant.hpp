// ruleproof: the delta-rule family (delta_rule, gated_delta_rule, kda): the options kernel
// authors use (L2 normalisation of q and k inside the op, beta up to 2, grouped value
// heads) and the adapters that turn each rule's head into KDA's.
#pragma once

#include "../core/heads.hpp"
#include "rule.hpp"

namespace ruleproof::kda {

/// \brief \f$ \hat x = x / \sqrt{\sum x^2 + \epsilon} \f$, row by row.
template <Scalar S> Mat<S> l2norm(const Mat<S> &x, const S &eps) {
  using std::sqrt;
  Mat<S> y(x.rows(), x.cols());
  for (Eigen::Index r = 0; r < x.rows(); ++r)
    y.row(r) = x.row(r) * S(S(1) / sqrt(S(x.row(r).squaredNorm() + eps)));
  return y;
}

/// \brief The chain rule through l2norm: \f$ dx = (d\hat x - \hat x (\hat x^\top d\hat x)) /
/// \sqrt{\sum x^2 + \epsilon} \f$, row by row.
template <Scalar S> Mat<S> l2norm_bwd(const Mat<S> &x, const Mat<S> &dy, const S &eps) {
  using std::sqrt;
  Mat<S> dx(x.rows(), x.cols());
  for (Eigen::Index r = 0; r < x.rows(); ++r) {
    const S inv = S(1) / sqrt(S(x.row(r).squaredNorm() + eps));
    const Mat<S> y = x.row(r) * inv;
    const S y_dy = y.row(0).dot(dy.row(r));
    dx.row(r) = (dy.row(r) - y.row(0) * y_dy) * inv;
  }
  return dx;
}

/// \brief The head as KDA sees it: the gate as L x K (zero for the delta rule, the scalar
/// gate repeated over the keys for Gated DeltaNet), q and k normalised when asked.
template <Scalar S> Head<S> as_kda(Head<S> x, GateKind gate, const Variant &var) {
  const Eigen::Index L = x.q.rows(), K = x.q.cols();
  if (gate == GateKind::none)
    x.g = Mat<S>::Zero(L, K);
  else if (gate == GateKind::scalar)
    x.g = x.g.replicate(1, K).eval();
  if (var.use_qk_l2norm) {
    const S eps = from_double<S>(var.l2norm_eps);
    x.q = l2norm(x.q, eps);
    x.k = l2norm(x.k, eps);
  }
  return x;
}

/// \brief KDA's gradients back to the rule's own inputs x: the gate gradient summed over
/// the keys (scalar gate) or dropped (no gate), the chain rule through l2norm.
template <Scalar S>
HeadGrads<S> from_kda(HeadGrads<S> d, const Head<S> &x, GateKind gate, const Variant &var) {
  if (gate == GateKind::none)
    d.dg = Mat<S>(x.q.rows(), 0);
  else if (gate == GateKind::scalar)
    d.dg = d.dg.rowwise().sum().eval();
  if (var.use_qk_l2norm) {
    const S eps = from_double<S>(var.l2norm_eps);
    d.dq = l2norm_bwd(x.q, d.dq, eps);
    d.dk = l2norm_bwd(x.k, d.dk, eps);
  }
  return d;
}

/// \brief Grouped value heads: HV = G H value heads (v [B, T, HV, V], g and beta with HV
/// heads, states [N, HV, K, V], o [B, T, HV, V]) share H query/key heads (q, k
/// [B, T, H, K]); value head i reads query/key head i / G, flash-linear-attention's
/// `i_h // (HV // H)`. Returns G, 1 when the head counts agree.
template <Scalar S> std::size_t value_groups(const Inputs<S> &in) {
  if (in.q.rank() != 4 || in.v.rank() != 4 || in.q.dim(2) == in.v.dim(2))
    return 1; // validate() reports any shape problem
  const std::size_t H = in.q.dim(2), HV = in.v.dim(2);
  if (H == 0 || HV % H != 0)
    throw InputError("v", std::to_string(HV) + " value heads, not a multiple of the " +
                              std::to_string(H) + " query/key heads");
  return HV / H;
}

/// [B, T, H, D] -> [B, T, G H, D], head i of the result being head i / G of x.
template <Scalar S> Tensor<S> repeat_heads(const Tensor<S> &x, std::size_t G) {
  const std::size_t B = x.dim(0), T = x.dim(1), H = x.dim(2), D = x.dim(3);
  Tensor<S> y({B, T, H * G, D});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t i = 0; i < H * G; ++i)
        for (std::size_t d = 0; d < D; ++d)
          y(b, t, i, d) = x(b, t, i / G, d);
  return y;
}

/// The adjoint of repeat_heads: [B, T, G H, D] -> [B, T, H, D], summing each group.
template <Scalar S> Tensor<S> sum_head_groups(const Tensor<S> &dy, std::size_t G) {
  const std::size_t B = dy.dim(0), T = dy.dim(1), HV = dy.dim(2), D = dy.dim(3);
  Tensor<S> dx({B, T, HV / G, D});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t i = 0; i < HV; ++i)
        for (std::size_t d = 0; d < D; ++d)
          dx(b, t, i / G, d) += dy(b, t, i, d);
  return dx;
}

namespace family {
/// The inputs with q and k repeated over each group of G value heads.
template <Scalar S> Inputs<S> with_value_heads(const Inputs<S> &in, std::size_t G) {
  Inputs<S> x = in;
  if (G > 1) {
    x.q = repeat_heads(in.q, G);
    x.k = repeat_heads(in.k, G);
  }
  return x;
}
} // namespace family

} // namespace ruleproof::kda
