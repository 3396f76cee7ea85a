// ruleproof: iplr, one head: the recurrent form (the definition, its own loop), and the head
// as dplr's chunkwise engine sees it.
#pragma once

#include "../core/heads.hpp"
#include "../dplr/core.hpp"
#include "rule.hpp"

namespace ruleproof::iplr {

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

} // namespace ruleproof::iplr
