// ruleproof: iplr (identity plus low rank): S_t = S_{t-1} + b_t (a_t^T S_{t-1}) + k_t v_t^T,
// o_t = S_t^T (scale q_t); q, k, a, b [B, T, H, K], v [B, T, H, V], no gate, no beta. It is
// dplr in flash-linear-attention's parameterisation with g = 0: the recurrent form here is
// its own loop, every other form runs dplr's chunkwise engine with a = b_iplr, d = -a_iplr
// and no decay.
#pragma once

#include "../dplr/dplr.hpp"

namespace ruleproof::iplr {

inline const Signature signature{GateKind::none, false, 0.0, 1.0, 0, true};

/// \brief One head, the definition: \f$ S_t = S_{t-1} + b_t (a_t^\top S_{t-1}) + k_t
/// v_t^\top \f$, plain loops.
template <Scalar S> HeadOutput<S> recurrent_head(const Head<S> &x, const S &scale) {
  const Eigen::Index L = x.q.rows(), K = x.q.cols(), V = x.v.cols();
  Mat<S> state = x.h0;
  Mat<S> o = Mat<S>::Zero(L, V);
  for (Eigen::Index t = 0; t < L; ++t) {
    for (Eigen::Index j = 0; j < V; ++j) {
      S proj(0);
      for (Eigen::Index i = 0; i < K; ++i)
        proj += x.a(t, i) * state(i, j); // (a_t^T S_{t-1})_j
      for (Eigen::Index i = 0; i < K; ++i)
        state(i, j) += x.b(t, i) * proj + x.k(t, i) * x.v(t, j); // + b_t (a^T S) + k_t v_t^T
    }
    for (Eigen::Index j = 0; j < V; ++j) {
      S acc(0);
      for (Eigen::Index i = 0; i < K; ++i)
        acc += state(i, j) * (scale * x.q(t, i)); // o_t = S_t^T q~_t
      o(t, j) = acc;
    }
  }
  return {o, state};
}

/// The head as dplr's engine sees it: no decay, a_core = b, d = -a.
template <Scalar S> Head<S> as_core(const Head<S> &x) {
  return dplr::as_core(x, dplr::Parameterisation::fla);
}

template <Scalar S> HeadGrads<S> from_core(HeadGrads<S> d, const Head<S> &x) {
  d = dplr::from_core(std::move(d), x, dplr::Parameterisation::fla);
  d.dg = Mat<S>(x.q.rows(), 0);
  return d;
}

template <Scalar S> Output<S> recurrent(const Inputs<S> &in, const Options &opts) {
  return forward_heads(in, opts, signature,
                       [](const Head<S> &x, const S &scale) { return recurrent_head(x, scale); });
}

template <Scalar S> Output<S> parallel(const Inputs<S> &in, const Options &opts) {
  return forward_heads(in, opts, signature, [](const Head<S> &x, const S &scale) {
    return dplr::parallel_head(as_core(x), scale);
  });
}

template <Scalar S> Output<S> chunk(const Inputs<S> &in, const Options &opts) {
  return forward_heads(in, opts, signature, [&](const Head<S> &x, const S &scale) {
    return dplr::chunk_head(as_core(x), scale, opts.chunk_size);
  });
}

/// The chunkwise analytic backward: dq, dk, dv, da, db, dh0.
template <Scalar S>
Grads<S> chunk_backward(const Inputs<S> &in, const Cotangents<S> &ct, const Options &opts) {
  return backward_heads(
      in, ct, opts, signature, [&](const Head<S> &x, const HeadCotangent<S> &c, const S &scale) {
        return from_core(dplr::chunk_backward_head(as_core(x), c, scale, opts.chunk_size), x);
      });
}

} // namespace ruleproof::iplr
