// ruleproof: sympow (symmetric power attention, seed 004), every form on [B, T, H, K] tensors.
//
//   S_i = gamma_i S_{i-1} + V_i phi^p(K'_i)^T,   Z_i = gamma_i Z_{i-1} + phi^p(K'_i)^T,
//   Y_i = S_i phi^p(Q'_i) / (Z_i phi^p(Q'_i)),   Q'_i = R(mu_i) Q_i,  K'_i = R(mu_i) K_i,
//   mu_i = mu_{i-1} + beta_i theta.
//
// Inputs (ruleproof::Inputs): q, k [B, T, H, K]; v [B, T, H, V]; g = log gamma <= 0 [B, T, H]
// (empty: ungated, gamma = 1); beta [B, T, H] (empty: beta = 1); h0 [N, H, D, V'] with
// D = C(K+p-1, p), V' = V+1 normalised (last column Z^T), V plain. Every form takes, beside
// h0, the angles mu_0 to start from (mu0 [N, H, K/2], empty: mu_0 = 0); final_angles gives
// those a call ends at, so that a call split in two carries (H, mu) from one part to the next.
// Variants, by what is given:
//   plain            g empty, beta empty, rotary_base 0
//   fixed rotary     rotary_base N (or theta), beta empty        (mu_i = i theta)
//   gated            g given                                      (b_ij = e^{G_i - G_j})
//   conformal rates  rotary_base N and beta given                 (mu_i = sum_{t<=i} beta_t theta)
//   conformal-sympow g and beta given, with rotary_base N
// The seed draws gamma_i = sigmoid(.) and beta_i = 1 + tanh(.) in (0, 2); here g <= 0 is
// checked and beta may be any finite number (the seed's range is a property of its model).
#pragma once

#include "attention.hpp"
#include "backward.hpp"
#include "chunk.hpp"
#include "recurrent.hpp"

namespace ruleproof::sympow {

/// The three forms, for tables that walk them. sympow's own, not the registry's Form
/// (reference/rule_id.hpp): its quadratic form is the attention form, with no parallel form
/// beside it.
enum class Form { attention, recurrent, chunk };

inline const char *name_of(Form f) {
  switch (f) {
  case Form::attention: return "attention";
  case Form::recurrent: return "recurrent";
  case Form::chunk: return "chunk";
  }
  return "?";
}

/// \brief The attention (quadratic) form: never builds phi^p or the state, unless h0 is
/// given or opts.output_final_state asks for the state. mu0: the initial angles, [N, H, K/2]
/// or empty (mu_0 = 0), as for every form.
template <Scalar S>
Output<S> attention(const Inputs<S> &in, const SympowOptions &opts,
                    const Tensor<S> &mu0 = Tensor<S>()) {
  return forward_heads(
      in, opts, [&](const SympowHead<S> &x) { return attention_head(x, opts.output_final_state); },
      mu0);
}

/// \brief The recurrent form (the definition); keeps the D x V' state of every head.
template <Scalar S>
Output<S> recurrent(const Inputs<S> &in, const SympowOptions &opts,
                    const Tensor<S> &mu0 = Tensor<S>()) {
  if (in.q.rank() == 4 && in.v.rank() == 4)
    detail::require_state_memory<S>(in.q.dim(3), in.v.dim(3), opts, "the recurrent form");
  return forward_heads(
      in, opts, [](const SympowHead<S> &x) { return recurrent_head(x); }, mu0);
}

/// \brief The chunked form with chunk size opts.chunk_size; keeps the D x V' state.
template <Scalar S>
Output<S> chunk(const Inputs<S> &in, const SympowOptions &opts,
                const Tensor<S> &mu0 = Tensor<S>()) {
  if (in.q.rank() == 4 && in.v.rank() == 4)
    detail::require_state_memory<S>(in.q.dim(3), in.v.dim(3), opts, "the chunked form");
  return forward_heads(
      in, opts, [&](const SympowHead<S> &x) { return chunk_head(x, opts.chunk_size); }, mu0);
}

/// One of the three forms by name.
template <Scalar S>
Output<S> forward(Form f, const Inputs<S> &in, const SympowOptions &opts,
                  const Tensor<S> &mu0 = Tensor<S>()) {
  switch (f) {
  case Form::attention: return attention(in, opts, mu0);
  case Form::recurrent: return recurrent(in, opts, mu0);
  case Form::chunk: return chunk(in, opts, mu0);
  }
  return {};
}

/// \brief Analytic gradients of \f$ \langle dO, O \rangle \f$ through the attention form:
/// dq, dk [B, T, H, K], dv [B, T, H, V], dg [B, T, H] when g is given, dbeta [B, T, H] when
/// beta is given. Takes no initial state and no final-state cotangent (yet).
template <Scalar S>
Grads<S> attention_backward(const Inputs<S> &in, const Cotangents<S> &ct,
                            const SympowOptions &opts) {
  using std::sqrt;
  validate(in, opts);
  if (!in.h0.empty())
    throw InputError("initial_state", "attention_backward takes no initial state");
  if (!ct.d_ht.empty())
    throw InputError("dht", "attention_backward differentiates <dO, O> only; pass no dht");
  ruleproof::detail::expect_shape("do", ct.d_o.shape(), in.v.shape());
  ruleproof::detail::expect_finite("do", ct.d_o);
  const std::size_t B = in.q.dim(0), T = in.q.dim(1), H = in.q.dim(2), d = in.q.dim(3);
  Options o;
  o.cu_seqlens = opts.cu_seqlens;
  const auto seqs = sequences_of(B, T, o);
  const S scale = opts.scale ? from_double<S>(*opts.scale)
                             : S(1) / sqrt(from_double<S>(static_cast<double>(d)));
  const Vec<S> theta = theta_of<S>(opts, d);
  Grads<S> grads;
  grads.dq = Tensor<S>(in.q.shape());
  grads.dk = Tensor<S>(in.k.shape());
  grads.dv = Tensor<S>(in.v.shape());
  if (!in.g.empty())
    grads.dg = Tensor<S>(in.g.shape());
  if (!in.beta.empty())
    grads.dbeta = Tensor<S>(in.beta.shape());
  ruleproof::detail::parallel_for(
      seqs.size() * H, parallel_ok<S> ? opts.threads : 1, [&](std::size_t i) {
        const Sequence &seq = seqs[i / H];
        const std::size_t h = i % H;
        const HeadGrads<S> r =
            attention_backward_head(slice_head(in, seq, h, opts, theta, scale),
                                    ruleproof::detail::rows_of(ct.d_o, seq, h), scale);
        ruleproof::detail::put_rows(grads.dq, r.dq, seq, h);
        ruleproof::detail::put_rows(grads.dk, r.dk, seq, h);
        ruleproof::detail::put_rows(grads.dv, r.dv, seq, h);
        if (!in.g.empty())
          ruleproof::detail::put_rows(grads.dg, r.dg, seq, h);
        if (!in.beta.empty())
          ruleproof::detail::put_rows(grads.dbeta, Mat<S>(r.dbeta), seq, h);
      });
  return grads;
}

} // namespace ruleproof::sympow
