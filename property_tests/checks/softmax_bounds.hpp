// ruleproof property checks: the error bounds of softmax attention (reference/softmax_attn;
// rules::BoundFamily::softmax), derived from the precision. The ONE copy of this derivation:
// the shared checks (properties.hpp) and softmax attention's own tests
// (softmax_attn_properties.hpp) both use it.
//
// Forward. Each score s_ij = q~_i^T k_j - m (i - j) + G_i - G_j is computed with absolute
// error at most delta = gamma_{K + L + 4} sigma, sigma the largest sum of the absolute values
// of its terms (|q~||k| summed over features, m |i - j|, and |G_i| + |G_j| with G a
// cumulative sum of L gates; q and k after their rotation, which keeps every pair's norm).
// exp turns that into a relative error delta in each weight, the normalisation into
// 2 delta + gamma_L in each probability, so a form's output differs from the exact one by at
// most (2 delta + gamma_n) M_i with n = 2 L + V + 8 and M_i = sum_j P_ij |v'_j|_max
// (rotations add gamma_4 relative). Two forms differ by twice that. Underflow (weights below
// the smallest normal number) adds at most n times the smallest normal number per element.
//
// Gradients. The terms of each gradient, bounded: dv_j = sum_i P_ij du_i gives L |dO|; with
// |dP_ij| and |du_i . u_i| at most V |dO| A (A = max |v'|), |ds_ij| <= 2 V |dO| A P_ij, so dq
// gives 2 V |dO| A Km, dk gives L 2 V |dO| A Qm, dg (sums of ds over i >= l > j) gives
// L^2 2 V |dO| A. Their sum bounds every gradient's terms: L |dO| (1 + 2 V A (Qm + Km + L)).
// The analytic backward differs from the dual-number derivative by at most
// 2 (2 delta + gamma_n') times that, n' = 2 n. A loss evaluation rounds with error up to
// (2 delta + gamma_n) sum |dO| M; finite differences divide it by their step h.
#pragma once

#include <limits>

#include "reference/core/gradients.hpp"
#include "reference/softmax_attn/softmax_attn.hpp"
#include "rounding.hpp"

namespace ruleproof::checks::softmax {

/// \brief The score error delta and the per-element output bound of the comment at the top.
template <class S> struct ForwardBound {
  S delta, gamma;      ///< the score's absolute error, the chain's relative error
  double n = 0;        ///< the chain's length, 2 L + V + 8
  Tensor<S> magnitude; ///< M_i = sum_j P_ij |v'_j|_max
  Tensor<S> output;    ///< allowed |o_a - o_b|, element by element
};

template <Scalar S>
ForwardBound<S> forward_bound(const Inputs<S> &in, const Options &opts,
                              const softmax_attn::Encoding &enc) {
  using std::abs;
  const std::size_t B = in.q.dim(0), T = in.q.dim(1), H = in.q.dim(2), K = in.q.dim(3);
  const std::size_t V = in.v.dim(3);
  const double L = static_cast<double>(longest_sequence(B, T, opts));
  const S scale = scale_of<S>(opts, K);
  ForwardBound<S> b;
  b.n = 2 * L + static_cast<double>(V) + 8;
  b.gamma = gamma_n<S>(b.n);
  b.magnitude = Tensor<S>({B, T, H, V});
  S sigma(0);
  for (const Sequence &seq : sequences_of(B, T, opts))
    for (std::size_t h = 0; h < H; ++h) {
      const Head<S> x = slice_head(in, seq, h, softmax_attn::signature_of(in));
      const softmax_attn::Encoded<S> e = softmax_attn::encode(x, scale, enc);
      const Mat<S> P = softmax_attn::probabilities(e, enc);
      S G_max(0);
      for (Eigen::Index i = 0; i < e.G.size(); ++i)
        G_max = abs(e.G(i)) > G_max ? S(abs(e.G(i))) : G_max;
      for (Eigen::Index i = 0; i < P.rows(); ++i)
        for (Eigen::Index j = 0; j <= i; ++j) {
          const S terms = e.q.row(i).cwiseAbs().dot(e.k.row(j).cwiseAbs()) +
                          from_double<S>(enc.alibi_slope) * S(static_cast<int>(i - j)) +
                          S(2) * G_max;
          sigma = terms > sigma ? terms : sigma;
        }
      const Mat<S> magnitude =
          P * e.v.cwiseAbs().rowwise().maxCoeff().replicate(1, static_cast<Eigen::Index>(V));
      for (std::size_t t = 0; t < seq.length(); ++t)
        for (std::size_t d = 0; d < V; ++d)
          b.magnitude(seq.batch, seq.begin + t, h, d) = magnitude(t, d);
    }
  b.delta = gamma_n<S>(static_cast<double>(K) + L + 4) * sigma;
  const S relative = S(2) * (S(2) * b.delta + b.gamma + gamma_n<S>(4));
  const S floor = from_double<S>(b.n) * std::numeric_limits<S>::min();
  b.output = b.magnitude;
  for (std::size_t i = 0; i < b.output.size(); ++i)
    b.output[i] = relative * b.output[i] + floor;
  return b;
}

/// \brief The gradient bounds of the comment at the top: `allowed` on |analytic - dual| (and
/// on the dual side's own rounding), `rounding` the loss's, to divide by the step h.
template <Scalar S>
GradientBound<S> gradient_bound(const Inputs<S> &in, const Cotangents<S> &ct, const Options &opts,
                                const softmax_attn::Encoding &enc) {
  using std::abs;
  using std::sqrt;
  const ForwardBound<S> fb = forward_bound(in, opts, enc);
  const std::size_t K = in.q.dim(3), V = in.v.dim(3);
  const S scale = scale_of<S>(opts, K);
  S dmax(0), A(0), Qm(0), Km(0);
  const auto grow = [](S &m, const S &x) { m = abs(x) > m ? S(abs(x)) : m; };
  for (std::size_t i = 0; i < ct.d_o.size(); ++i)
    grow(dmax, ct.d_o[i]);
  for (std::size_t i = 0; i < in.v.size(); ++i)
    grow(A, in.v[i]); // rotations keep each pair's norm: |v'| <= sqrt(2) max |v|
  for (std::size_t i = 0; i < in.q.size(); ++i)
    grow(Qm, S(scale * in.q[i])), grow(Km, in.k[i]);
  A *= sqrt(S(2)), Qm *= sqrt(S(2)), Km *= sqrt(S(2));
  const S L = from_double<S>(static_cast<double>(longest_sequence(in.q.dim(0), in.q.dim(1), opts)));
  const S Vs = S(static_cast<int>(V));
  const S terms = L * dmax * (S(1) + S(2) * Vs * A * (Qm + Km + L));
  const S relative = S(2) * (S(2) * fb.delta + gamma_n<S>(2 * fb.n));
  const S allowed = relative * terms + from_double<S>(2 * fb.n) * std::numeric_limits<S>::min();
  S loss_magnitude(0);
  for (std::size_t i = 0; i < ct.d_o.size(); ++i)
    loss_magnitude += abs(ct.d_o[i]) * fb.magnitude[i];
  GradientBound<S> b;
  b.rounding = (S(2) * fb.delta + fb.gamma) * loss_magnitude;
  for (const auto &f : grad_fields<S>())
    if (!(in.*f.input).empty()) {
      b.dual.*f.grad = Tensor<S>((in.*f.input).shape(), allowed);
      b.analytic.*f.grad = b.dual.*f.grad;
    }
  return b;
}

} // namespace ruleproof::checks::softmax
