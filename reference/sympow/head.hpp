// ruleproof: sympow's options, input checks and per-head driver. The rule (DESIGN.md, seed 004
// equations 2 and "conformal-sympow"):
//   S_i = gamma_i S_{i-1} + V_i phi^p(K'_i)^T,  Z_i = gamma_i Z_{i-1} + phi^p(K'_i)^T,
//   Y_i = S_i phi^p(Q'_i) / (Z_i phi^p(Q'_i)),  Q'_i = R(mu_i) Q_i,  K'_i = R(mu_i) K_i,
//   mu_i = mu_{i-1} + beta_i theta,  mu_0 = 0, or the angle a previous call ended at.
// Layout: the seed's S_i is V x D and Z_i is 1 x D; here the state is their transpose stacked
// side by side, H_i = [S_i^T | Z_i^T] in R^{D x (V+1)} ([D, V] when not normalised), so that
// o_i = H_i^T phi^p(Q'_i) as in DESIGN.md's o_t = S_t^T q_t. Tensors [N, H, D, V+1].
// Gates: g = log gamma <= 0, [B, T, H] (none: gamma = 1). Rotation: theta from rotary_base N
// (or given), beta [B, T, H] the data-dependent rate (none: beta = 1; no theta: no rotation).
// A call continuing an earlier one starts from that call's state H and its angle mu
// (final_angles, [N, H, K/2]): the forms take it as `mu0` beside Inputs::h0.
#pragma once

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "../core/heads.hpp"
#include "rotation.hpp"

namespace ruleproof::sympow {

/// \brief Everything of a sympow call that is not a differentiable tensor.
struct SympowOptions {
  int p = 2;                   ///< the symmetric power, 1 <= p <= 8 (tested: 1, 2, 3, 4, 6)
  bool normalize = true;       ///< Y = S phi(Q') / (Z phi(Q')); needs even p
  double rotary_base = 0;      ///< N in theta_i = 2 pi / N^(2(i-1)/d); 0: no rotation
  std::vector<double> theta;   ///< explicit rates (d/2 of them); overrides rotary_base
  std::optional<double> scale; ///< multiplies q; default d^-1/2 (cancels when normalised)
  std::size_t chunk_size = 64; ///< C >= 1, for the chunked form
  std::vector<std::int64_t> cu_seqlens;      ///< N+1 offsets with B == 1
  bool output_final_state = false;           ///< the attention form builds the state only if asked
  std::size_t max_bytes = default_max_bytes; ///< cap on one head's state, phi, Sym^p(P)
  unsigned threads = 1;
};

/// \brief One head of one sequence, ready for a form: q already scaled, the cumulative
/// log-gates and angles computed once.
template <class S> struct SympowHead {
  Mat<S> q, k;  ///< L x d (q multiplied by scale)
  Mat<S> v;     ///< L x V
  Vec<S> g;     ///< L log-gates, zeros when ungated
  Vec<S> beta;  ///< L rotation-rate multipliers, ones when fixed
  Vec<S> theta; ///< d/2 rates, empty when not rotating
  Mat<S> h0;    ///< D x V' initial state, 0 x 0 when none
  Vec<S> mu0;   ///< d/2 initial angles mu_0, empty when none (mu_0 = 0)
  int p = 2;
  bool normalize = true;
  bool rotating() const { return theta.size() > 0; }
};

/// \brief \f$ G_i = \sum_{t \le i} g_t = \log \prod_{t \le i} \gamma_t \f$; so
/// \f$ b_{ij} = \prod_{t=j+1}^{i} \gamma_t = e^{G_i - G_j} \f$ (seed 004, sympow+gating).
template <class S> Vec<S> log_gate_cumsum(const Vec<S> &g) {
  Vec<S> G = g;
  for (Eigen::Index t = 1; t < G.size(); ++t)
    G(t) += G(t - 1);
  return G;
}

/// \brief \f$ \mu_i = \mu_{i-1} + \beta_i \theta \f$ (seed 004, section 3.2), rows
/// i = 1..L, from \f$ \mu_0 \f$ = mu0 (d/2; empty: \f$ \mu_0 = 0 \f$). Returns L x d/2
/// (L x 0 when not rotating).
template <class S>
Mat<S> cumulative_angles(const Vec<S> &beta, const Vec<S> &theta, const Vec<S> &mu0 = Vec<S>()) {
  Mat<S> mu(beta.size(), theta.size());
  for (Eigen::Index i = 0; i < beta.size(); ++i)
    for (Eigen::Index c = 0; c < theta.size(); ++c)
      mu(i, c) = (i > 0 ? mu(i - 1, c) : (mu0.size() ? mu0(c) : S(0))) + beta(i) * theta(c);
  return mu;
}

/// \brief \f$ \mu_L \f$, the angle one head ends at (mu_0 when L = 0): what a call continuing
/// this one starts from. Returns d/2 (0 when not rotating).
template <class S> Vec<S> final_angle(const SympowHead<S> &x) {
  const Eigen::Index L = x.beta.size(), h = x.theta.size();
  if (L > 0)
    return cumulative_angles(x.beta, x.theta, x.mu0).row(L - 1).transpose();
  return x.mu0.size() ? x.mu0 : Vec<S>(Vec<S>::Zero(h));
}

/// \brief Rows of x turned by their angles: row i becomes \f$ R(\mu_i) x_i \f$ (seed 004,
/// \f$ Q'_i = R(\mu_i) Q_i \f$). x: L x d; mu: L x d/2 (L x 0: unchanged).
template <class S> Mat<S> rotate_rows(const Mat<S> &mu, const Mat<S> &x) {
  if (mu.cols() == 0)
    return x;
  Mat<S> y(x.rows(), x.cols());
  for (Eigen::Index i = 0; i < x.rows(); ++i)
    y.row(i) = rotate<S>(Vec<S>(mu.row(i).transpose()), Vec<S>(x.row(i).transpose())).transpose();
  return y;
}

/// \f$ s^p \f$ by repeated multiplication (p >= 1).
template <class S> S power(const S &s, int p) {
  S r = s;
  for (int i = 1; i < p; ++i)
    r *= s;
  return r;
}

/// Columns of the state: V + 1 when normalised (the last column is Z^T), else V.
inline std::size_t state_columns(std::size_t V, const SympowOptions &opts) {
  return V + (opts.normalize ? 1 : 0);
}

namespace detail {

inline long double state_elements(std::size_t d, std::size_t V, const SympowOptions &opts) {
  return embedding_dim(d, opts.p) * static_cast<long double>(state_columns(V, opts));
}

inline std::string state_what(std::size_t d, std::size_t V, const SympowOptions &opts,
                              const std::string &form) {
  return form + " keeps a state of D x (V" + (opts.normalize ? "+1" : "") +
         ") per head with D = C(d+p-1, p) = C(" + std::to_string(d + opts.p - 1) + ", " +
         std::to_string(opts.p) +
         ") = " + std::to_string(static_cast<unsigned long long>(embedding_dim(d, opts.p))) +
         ", V = " + std::to_string(V) + "; it";
}

/// Throws InputError when one head's state (D x V') in S exceeds opts.max_bytes.
template <class S>
void require_state_memory(std::size_t d, std::size_t V, const SympowOptions &opts,
                          const std::string &form) {
  sympow::detail::require_memory("p", state_what(d, V, opts, form), state_elements(d, V, opts),
                                 sizeof(S), opts.max_bytes);
}

} // namespace detail

/// \brief Checks a sympow call: p, shapes, finiteness, log-gates <= 0, rotation settings,
/// chunk size, cu_seqlens, the initial state. Throws InputError naming the tensor.
template <Scalar S> void validate(const Inputs<S> &in, const SympowOptions &opts) {
  using ruleproof::detail::expect_finite;
  using ruleproof::detail::expect_shape;
  if (opts.p < 1 || opts.p > 8)
    throw InputError("p", "must be in 1..8, got " + std::to_string(opts.p));
  if (opts.normalize && opts.p % 2 != 0)
    throw InputError(
        "p", "normalised sympow attention needs an even p, got p = " + std::to_string(opts.p) +
                 ": with odd p the scores (q^T k)^p can be negative, so they are "
                 "not a distribution and Z phi(q) can vanish; set normalize = false "
                 "for odd p");
  const auto [B, T, H, K, V] = validate_qkv(in);
  if (!in.g.empty())
    expect_shape("g", in.g.shape(), {B, T, H});
  const bool rotating = !opts.theta.empty() || opts.rotary_base != 0;
  if (!in.beta.empty()) {
    expect_shape("beta", in.beta.shape(), {B, T, H});
    if (!rotating)
      throw InputError("beta", "data-dependent rotation rates need theta: set rotary_base "
                               "(N > 0) or theta");
  }
  if (rotating) {
    if (K % 2 != 0)
      throw InputError("q",
                       "rotary embeddings pair the features: K = " + std::to_string(K) + " is odd");
    if (!opts.theta.empty() && opts.theta.size() != K / 2)
      throw InputError("theta", std::to_string(opts.theta.size()) +
                                    " rates, expected K/2 = " + std::to_string(K / 2));
    for (std::size_t c = 0; c < opts.theta.size(); ++c)
      if (!std::isfinite(opts.theta[c]))
        throw InputError("theta", "element " + std::to_string(c) + " is not finite");
    if (opts.theta.empty() && (!(opts.rotary_base > 0) || !std::isfinite(opts.rotary_base)))
      throw InputError("rotary_base",
                       "N = " + std::to_string(opts.rotary_base) + " must be positive and finite");
  }
  if (opts.scale && !std::isfinite(*opts.scale))
    throw InputError("scale", "is not finite");
  validate_sequences(opts.chunk_size, opts.cu_seqlens, B, T);
  if (!in.h0.empty()) {
    detail::require_state_memory<S>(K, V, opts, "the initial state");
    const std::size_t N = opts.cu_seqlens.empty() ? B : opts.cu_seqlens.size() - 1;
    const std::size_t D = static_cast<std::size_t>(embedding_dim(K, opts.p));
    expect_shape("initial_state", in.h0.shape(), {N, H, D, state_columns(V, opts)});
  }
  expect_finite("q", in.q);
  expect_finite("k", in.k);
  expect_finite("v", in.v);
  expect_finite("g", in.g);
  expect_finite("beta", in.beta);
  expect_finite("initial_state", in.h0);
  validate_log_gates(in.g);
}

/// \brief Checks the angles a call starts from: [N, H, K/2], finite, on a rotating call.
/// Throws InputError naming "initial_angle".
template <Scalar S>
void validate_initial_angles(const Tensor<S> &mu0, const Inputs<S> &in, const SympowOptions &opts) {
  if (mu0.empty())
    return;
  if (opts.theta.empty() && opts.rotary_base == 0)
    throw InputError("initial_angle", "an initial angle needs a rotation: set rotary_base "
                                      "(N > 0) or theta");
  const std::size_t B = in.q.dim(0), H = in.q.dim(2), K = in.q.dim(3);
  const std::size_t N = opts.cu_seqlens.empty() ? B : opts.cu_seqlens.size() - 1;
  ruleproof::detail::expect_shape("initial_angle", mu0.shape(), {N, H, K / 2});
  ruleproof::detail::expect_finite("initial_angle", mu0);
}

/// The rates theta in S: the explicit ones, those of rotary_base, or none.
template <Scalar S> Vec<S> theta_of(const SympowOptions &opts, std::size_t d) {
  if (!opts.theta.empty()) {
    Vec<S> theta(static_cast<Eigen::Index>(opts.theta.size()));
    for (std::size_t c = 0; c < opts.theta.size(); ++c)
      theta(static_cast<Eigen::Index>(c)) = from_double<S>(opts.theta[c]);
    return theta;
  }
  if (opts.rotary_base != 0)
    return rotary_rates<S>(d, opts.rotary_base);
  return Vec<S>();
}

/// Cuts head h of sequence seq out of the inputs, with its initial angles when mu0 ([N, H, K/2])
/// is given; q is multiplied by scale.
template <Scalar S>
SympowHead<S> slice_head(const Inputs<S> &in, const Sequence &seq, std::size_t h,
                         const SympowOptions &opts, const Vec<S> &theta, const S &scale,
                         const Tensor<S> &mu0 = Tensor<S>()) {
  using ruleproof::detail::rows_of;
  const std::size_t L = seq.length(), d = in.q.dim(3), V = in.v.dim(3);
  SympowHead<S> x;
  x.q = scale * rows_of(in.q, seq, h);
  x.k = rows_of(in.k, seq, h);
  x.v = rows_of(in.v, seq, h);
  x.g = in.g.empty() ? Vec<S>(Vec<S>::Zero(static_cast<Eigen::Index>(L)))
                     : Vec<S>(rows_of(in.g, seq, h).col(0));
  x.beta = in.beta.empty() ? Vec<S>(Vec<S>::Ones(static_cast<Eigen::Index>(L)))
                           : Vec<S>(rows_of(in.beta, seq, h).col(0));
  x.theta = theta;
  if (!in.h0.empty())
    x.h0 = ruleproof::detail::state_of(in.h0, seq.index, h,
                                       static_cast<std::size_t>(embedding_dim(d, opts.p)),
                                       state_columns(V, opts));
  if (!mu0.empty()) {
    x.mu0 = Vec<S>(static_cast<Eigen::Index>(mu0.dim(2)));
    for (std::size_t c = 0; c < mu0.dim(2); ++c)
      x.mu0(static_cast<Eigen::Index>(c)) = mu0(seq.index, h, c);
  }
  x.p = opts.p;
  x.normalize = opts.normalize;
  return x;
}

/// \brief Validates, then runs `form(head)` (returning HeadOutput) on every head of every
/// sequence, each from its initial angles when mu0 ([N, H, K/2]) is given; the final state is
/// gathered when opts.output_final_state.
template <Scalar S, class Form>
Output<S> forward_heads(const Inputs<S> &in, const SympowOptions &opts, Form form,
                        const Tensor<S> &mu0 = Tensor<S>()) {
  using std::sqrt;
  validate(in, opts);
  validate_initial_angles(mu0, in, opts);
  const std::size_t B = in.q.dim(0), T = in.q.dim(1), H = in.q.dim(2), d = in.q.dim(3);
  const std::size_t V = in.v.dim(3);
  Options o;
  o.cu_seqlens = opts.cu_seqlens;
  const auto seqs = sequences_of(B, T, o);
  const S scale = opts.scale ? from_double<S>(*opts.scale)
                             : S(1) / sqrt(from_double<S>(static_cast<double>(d)));
  const Vec<S> theta = theta_of<S>(opts, d);
  Output<S> out;
  out.o = Tensor<S>({B, T, H, V});
  if (opts.output_final_state) {
    detail::require_state_memory<S>(d, V, opts, "the final state");
    out.final_state = Tensor<S>({seqs.size(), H, static_cast<std::size_t>(embedding_dim(d, opts.p)),
                                 state_columns(V, opts)});
  }
  ruleproof::detail::parallel_for(
      seqs.size() * H, parallel_ok<S> ? opts.threads : 1, [&](std::size_t i) {
        const Sequence &seq = seqs[i / H];
        const std::size_t h = i % H;
        HeadOutput<S> r = form(slice_head(in, seq, h, opts, theta, scale, mu0));
        ruleproof::detail::put_rows(out.o, r.o, seq, h);
        if (opts.output_final_state)
          ruleproof::detail::put_state(out.final_state, r.ht, seq.index, h);
      });
  return out;
}

/// \brief \f$ \mu_L = \mu_0 + \sum_{t \le L} \beta_t \theta \f$ summed as the forms sum it
/// (cumulative_angles), the angle every head of every sequence ends at: with the final state,
/// what a call continuing this one starts from. mu0: the call's initial angles, [N, H, K/2]
/// or empty (mu_0 = 0). Returns [N, H, K/2]; empty when the call does not rotate.
template <Scalar S>
Tensor<S> final_angles(const Inputs<S> &in, const SympowOptions &opts,
                       const Tensor<S> &mu0 = Tensor<S>()) {
  validate(in, opts);
  validate_initial_angles(mu0, in, opts);
  const std::size_t B = in.q.dim(0), T = in.q.dim(1), H = in.q.dim(2), d = in.q.dim(3);
  const Vec<S> theta = theta_of<S>(opts, d);
  if (theta.size() == 0)
    return Tensor<S>();
  Options o;
  o.cu_seqlens = opts.cu_seqlens;
  const auto seqs = sequences_of(B, T, o);
  Tensor<S> mu({seqs.size(), H, d / 2});
  for (const Sequence &seq : seqs)
    for (std::size_t h = 0; h < H; ++h) {
      const Vec<S> last = final_angle(slice_head(in, seq, h, opts, theta, S(1), mu0));
      for (std::size_t c = 0; c < d / 2; ++c)
        mu(seq.index, h, c) = last(static_cast<Eigen::Index>(c));
    }
  return mu;
}

} // namespace ruleproof::sympow
