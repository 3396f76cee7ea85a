// ruleproof: softmax attention (quadratic), with the position encodings seed 000 compares:
// an ALiBi bias, rotary encoding on q and k (seed 000 eq. 1), rotary encoding on v and o
// (seed 000 eq. 2), and a data-dependent scalar gate as a bias,
// b_ij = log prod_{m=j+1}^{i} gamma_m = G_i - G_j with g = log gamma <= 0 ([B, T, H]).
// Three forms: parallel (the score matrix), recurrent (online softmax, one key at a time)
// and chunk (blocks of C keys with a running maximum); an analytic backward.
#pragma once

#include <cmath>

#include "../gla/parallel.hpp"
#include "rule.hpp"

namespace ruleproof::softmax_attn {

/// The signature: a scalar log-gate when one is given, none otherwise.
template <class S> Signature signature_of(const Inputs<S> &in) {
  return {in.g.empty() ? GateKind::none : GateKind::scalar};
}

/// \brief \f$ R_t x \f$ for every row t of X (or \f$ R_t^\top x \f$ when `transpose`).
template <Scalar S> Mat<S> rotate_rows(const Mat<S> &X, double base, bool transpose = false) {
  using std::cos;
  using std::exp;
  using std::log;
  using std::sin;
  const Eigen::Index d = X.cols();
  if (d % 2 != 0)
    throw InputError("rope", "rotary encoding needs an even dimension, got " + std::to_string(d));
  Mat<S> Y = X;
  for (Eigen::Index c = 0; c < d / 2; ++c) {
    // theta_c = base^(-2c/d), in S so the truth keeps its digits
    const S theta =
        exp(-S(static_cast<int>(2 * c)) / S(static_cast<int>(d)) * log(from_double<S>(base)));
    for (Eigen::Index t = 0; t < X.rows(); ++t) {
      const S angle = S(static_cast<int>(t)) * theta;
      const S cs = cos(angle), sn = transpose ? S(-sin(angle)) : S(sin(angle));
      Y(t, 2 * c) = cs * X(t, 2 * c) - sn * X(t, 2 * c + 1);
      Y(t, 2 * c + 1) = sn * X(t, 2 * c) + cs * X(t, 2 * c + 1);
    }
  }
  return Y;
}

/// \brief The encoded head: rotated q, k, v (where asked) and the log gate cumsum G.
template <class S> struct Encoded {
  Mat<S> q, k, v; ///< R_i q_i, R_j k_j, R_j v_j
  Vec<S> G;       ///< G_i = sum_{m <= i} g_m (zeros without a gate)
};

template <Scalar S> Encoded<S> encode(const Head<S> &x, const S &scale, const Encoding &enc) {
  Encoded<S> e;
  e.q = scale * (enc.rope_qk ? rotate_rows(x.q, enc.rope_base) : x.q);
  e.k = enc.rope_qk ? rotate_rows(x.k, enc.rope_base) : x.k;
  e.v = enc.rope_vo ? rotate_rows(x.v, enc.rope_base) : x.v;
  e.G = x.g.cols() ? Vec<S>(gla::log_cumulative_decay(x.g).col(0)) : Vec<S>::Zero(x.q.rows());
  return e;
}

/// \f$ s_{ij} = \tilde q_i^\top k_j - m (i - j) + G_i - G_j \f$, for j <= i.
template <Scalar S>
S score(const Encoded<S> &e, Eigen::Index i, Eigen::Index j, const Encoding &enc) {
  return e.q.row(i).dot(e.k.row(j)) - from_double<S>(enc.alibi_slope) * S(static_cast<int>(i - j)) +
         e.G(i) - e.G(j);
}

/// o_i = R_i^T u_i under VO-RoPE (seed 000 eq. 2), u_i otherwise.
template <Scalar S> Mat<S> decode(const Mat<S> &u, const Encoding &enc) {
  return enc.rope_vo ? rotate_rows(u, enc.rope_base, true) : u;
}

/// \brief The causal probabilities \f$ P_{ij} = \exp(s_{ij} - \max_j s_{ij}) / \ell_i \f$.
template <Scalar S> Mat<S> probabilities(const Encoded<S> &e, const Encoding &enc) {
  using std::exp;
  const Eigen::Index L = e.q.rows();
  Mat<S> P = Mat<S>::Zero(L, L);
  for (Eigen::Index i = 0; i < L; ++i) {
    S row_max = score(e, i, 0, enc);
    for (Eigen::Index j = 0; j <= i; ++j) {
      P(i, j) = score(e, i, j, enc);
      if (P(i, j) > row_max)
        row_max = P(i, j);
    }
    S total(0);
    for (Eigen::Index j = 0; j <= i; ++j)
      total += (P(i, j) = exp(P(i, j) - row_max));
    P.row(i).head(i + 1) /= total;
  }
  return P;
}

/// One head, parallel form: O = decode(P V').
template <Scalar S>
HeadOutput<S> parallel_head(const Head<S> &x, const S &scale, const Encoding &enc) {
  const Encoded<S> e = encode(x, scale, enc);
  return {decode(Mat<S>(probabilities(e, enc) * e.v), enc), Mat<S>()};
}

/// \brief One head, recurrent form: for each query, the keys one at a time with a running
/// maximum m, normaliser l and accumulator a (online softmax).
template <Scalar S>
HeadOutput<S> recurrent_head(const Head<S> &x, const S &scale, const Encoding &enc) {
  using std::exp;
  const Encoded<S> e = encode(x, scale, enc);
  const Eigen::Index L = x.q.rows();
  Mat<S> u = Mat<S>::Zero(L, x.v.cols());
  for (Eigen::Index i = 0; i < L; ++i) {
    S m = score(e, i, 0, enc), l(0);
    Vec<S> a = Vec<S>::Zero(x.v.cols());
    for (Eigen::Index j = 0; j <= i; ++j) {
      const S s = score(e, i, j, enc);
      const S m_new = s > m ? s : m;
      const S rescale = exp(m - m_new), p = exp(s - m_new);
      l = rescale * l + p;
      a = rescale * a + p * Vec<S>(e.v.row(j).transpose());
      m = m_new;
    }
    u.row(i) = (a / l).transpose();
  }
  return {decode(u, enc), Mat<S>()};
}

/// \brief One head, chunk form: for each query chunk, key chunks of C with a running row
/// maximum, as a blockwise (flash) kernel computes it.
template <Scalar S>
HeadOutput<S> chunk_head(const Head<S> &x, const S &scale, const Encoding &enc, std::size_t C) {
  using std::exp;
  const Encoded<S> e = encode(x, scale, enc);
  const Eigen::Index L = x.q.rows(), n = static_cast<Eigen::Index>(C);
  Mat<S> u = Mat<S>::Zero(L, x.v.cols());
  for (Eigen::Index qs = 0; qs < L; qs += n) {
    const Eigen::Index qn = std::min(n, L - qs);
    Vec<S> m(qn), l = Vec<S>::Zero(qn);
    for (Eigen::Index r = 0; r < qn; ++r)
      m(r) = score(e, qs + r, 0, enc);
    Mat<S> acc = Mat<S>::Zero(qn, x.v.cols());
    for (Eigen::Index ks = 0; ks <= qs + qn - 1; ks += n) {
      const Eigen::Index kn = std::min(n, L - ks);
      for (Eigen::Index r = 0; r < qn; ++r) {
        const Eigen::Index i = qs + r, last = std::min(ks + kn - 1, i);
        if (last < ks)
          continue; // this key block lies wholly after query i
        S block_max = m(r);
        for (Eigen::Index j = ks; j <= last; ++j)
          if (score(e, i, j, enc) > block_max)
            block_max = score(e, i, j, enc);
        const S rescale = exp(m(r) - block_max);
        l(r) *= rescale;
        acc.row(r) *= rescale;
        for (Eigen::Index j = ks; j <= last; ++j) {
          const S p = exp(score(e, i, j, enc) - block_max);
          l(r) += p;
          acc.row(r) += p * e.v.row(j);
        }
        m(r) = block_max;
      }
    }
    u.middleRows(qs, qn) = (acc.array().colwise() / l.array()).matrix();
  }
  return {decode(u, enc), Mat<S>()};
}

/// \brief One head, analytic backward of <dO, O>: du = decode^T(dO), dP = du V'^T,
/// ds_ij = P_ij (dP_ij - du_i . u_i), dq' = ds k', dk' = ds^T q', dv' = P^T du, then the
/// rotations back; the gate bias G_i - G_j gives dg_l = sum_{i >= l > j} ds_ij.
template <Scalar S>
HeadGrads<S> backward_head(const Head<S> &x, const HeadCotangent<S> &ct, const S &scale,
                           const Encoding &enc) {
  const Encoded<S> e = encode(x, scale, enc);
  const Eigen::Index L = x.q.rows();
  const Mat<S> P = probabilities(e, enc);
  const Mat<S> u = P * e.v;
  const Mat<S> du = enc.rope_vo ? rotate_rows(ct.d_o, enc.rope_base) : ct.d_o; // (R_i^T)^T dO_i
  const Mat<S> dP = du * e.v.transpose();
  Mat<S> ds = Mat<S>::Zero(L, L);
  for (Eigen::Index i = 0; i < L; ++i) {
    const S centre = du.row(i).dot(u.row(i));
    for (Eigen::Index j = 0; j <= i; ++j)
      ds(i, j) = P(i, j) * (dP(i, j) - centre);
  }
  const Mat<S> dq_rot = scale * (ds * e.k), dk_rot = ds.transpose() * e.q;
  const Mat<S> dv_rot = P.transpose() * du;
  HeadGrads<S> d;
  d.dq = enc.rope_qk ? rotate_rows(dq_rot, enc.rope_base, true) : dq_rot;
  d.dk = enc.rope_qk ? rotate_rows(dk_rot, enc.rope_base, true) : dk_rot;
  d.dv = enc.rope_vo ? rotate_rows(dv_rot, enc.rope_base, true) : dv_rot;
  d.dg = Mat<S>::Zero(L, x.g.cols());
  if (x.g.cols() > 0) {
    // dG_i = sum_j ds_ij - sum_k ds_ki, then dg_l = sum_{i >= l} dG_i
    const Vec<S> dG = ds.rowwise().sum() - Vec<S>(ds.colwise().sum().transpose());
    S running(0);
    for (Eigen::Index l = L - 1; l >= 0; --l)
      d.dg(l, 0) = (running += dG(l));
  }
  d.dh0 = Mat<S>::Zero(x.h0.rows(), x.h0.cols());
  return d;
}

/// What the shared checks cannot know: the slope's range, and that there is no state.
template <Scalar S> void check_encoding(const Inputs<S> &in, const Encoding &enc) {
  if (!(enc.alibi_slope >= 0) || !std::isfinite(enc.alibi_slope))
    throw InputError("alibi_slope",
                     "must be finite and >= 0, got " + std::to_string(enc.alibi_slope));
  if (!in.h0.empty())
    throw InputError("initial_state", "softmax attention keeps no fixed-size state");
}

template <Scalar S> Output<S> parallel(const Inputs<S> &in, Options opts, const Encoding &enc) {
  check_encoding(in, enc);
  opts.output_final_state = false;
  return forward_heads(in, opts, signature_of(in), [&](const Head<S> &x, const S &scale) {
    return parallel_head(x, scale, enc);
  });
}

template <Scalar S> Output<S> recurrent(const Inputs<S> &in, Options opts, const Encoding &enc) {
  check_encoding(in, enc);
  opts.output_final_state = false;
  return forward_heads(in, opts, signature_of(in), [&](const Head<S> &x, const S &scale) {
    return recurrent_head(x, scale, enc);
  });
}

template <Scalar S> Output<S> chunk(const Inputs<S> &in, Options opts, const Encoding &enc) {
  check_encoding(in, enc);
  opts.output_final_state = false;
  return forward_heads(in, opts, signature_of(in), [&](const Head<S> &x, const S &scale) {
    return chunk_head(x, scale, enc, opts.chunk_size);
  });
}

template <Scalar S>
Grads<S> chunk_backward(const Inputs<S> &in, const Cotangents<S> &ct, Options opts,
                        const Encoding &enc) {
  check_encoding(in, enc);
  if (!ct.d_ht.empty())
    throw InputError("dht", "softmax attention has no final state");
  opts.output_final_state = false;
  return backward_heads(in, ct, opts, signature_of(in),
                        [&](const Head<S> &x, const HeadCotangent<S> &c, const S &scale) {
                          return backward_head(x, c, scale, enc);
                        });
}

} // namespace ruleproof::softmax_attn
