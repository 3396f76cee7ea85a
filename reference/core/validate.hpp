// ruleproof: input checks shared by every rule. A failed check throws InputError naming
// the tensor and the problem, before anything is computed or written.
#pragma once

#include <string>

#include "gate_kind.hpp"
#include "inputs.hpp"

namespace ruleproof {

/// \brief The inputs a rule takes: its gate, whether it has beta and in what interval
/// beta must lie, how many columns its state has beyond V, and whether it takes
/// the low-rank pair a, b ([B, T, H, K] each; DPLR and IPLR).
struct Signature {
  GateKind gate = GateKind::none;
  bool has_beta = false;
  double beta_low = 0.0, beta_high = 1.0; ///< beta in (beta_low, beta_high]
  std::size_t extra_state_columns = 0;    ///< normalised linear attention keeps z beside S
  bool has_ab = false;                    ///< takes a and b, [B, T, H, K] each
  bool beta_high_open = false;            ///< beta in (beta_low, beta_high) instead
};

namespace detail {
inline void expect_shape(const std::string &name, const Shape &got, const Shape &want) {
  if (got != want)
    throw InputError(name, "shape " + shape_string(got) + ", expected " + shape_string(want));
}

template <Scalar S> void expect_finite(const std::string &name, const Tensor<S> &x) {
  for (std::size_t i = 0; i < x.size(); ++i)
    if (!is_finite(x[i]))
      throw InputError(name, "element " + std::to_string(i) + " is not finite (" +
                                 std::to_string(to_double(x[i])) + ")");
}
} // namespace detail

/// The sizes of a call: q, k [B, T, H, K], v [B, T, H, V].
struct CallSizes {
  std::size_t B, T, H, K, V;
};

/// \brief q, k of rank 4 and equal shape, v [B, T, H, V], K and V at least 1.
template <Scalar S> CallSizes validate_qkv(const Inputs<S> &in) {
  using detail::expect_shape;
  if (in.q.rank() != 4)
    throw InputError("q", "rank " + std::to_string(in.q.rank()) + ", expected [B, T, H, K]");
  const std::size_t B = in.q.dim(0), T = in.q.dim(1), H = in.q.dim(2), K = in.q.dim(3);
  expect_shape("k", in.k.shape(), in.q.shape());
  if (in.v.rank() != 4)
    throw InputError("v", "rank " + std::to_string(in.v.rank()) + ", expected [B, T, H, V]");
  const std::size_t V = in.v.dim(3);
  expect_shape("v", in.v.shape(), {B, T, H, V});
  if (K == 0 || V == 0)
    throw InputError(K == 0 ? "q" : "v", "feature dimension is 0");
  return {B, T, H, K, V};
}

/// \brief Chunk size >= 1; cu_seqlens (when given) with B == 1, N+1 >= 2 offsets from 0,
/// never decreasing (empty sequences are legal), ending at T.
inline void validate_sequences(std::size_t chunk_size, const std::vector<std::int64_t> &cu,
                               std::size_t B, std::size_t T) {
  if (chunk_size == 0)
    throw InputError("chunk_size", "must be at least 1");
  if (!cu.empty()) {
    if (B != 1)
      throw InputError("cu_seqlens", "needs batch size 1, got B = " + std::to_string(B));
    if (cu.size() < 2 || cu.front() != 0)
      throw InputError("cu_seqlens", "must start at 0 and hold N+1 >= 2 offsets");
    for (std::size_t n = 1; n < cu.size(); ++n)
      if (cu[n] < cu[n - 1])
        throw InputError("cu_seqlens", "not increasing at position " + std::to_string(n) + " (" +
                                           std::to_string(cu[n - 1]) + " then " +
                                           std::to_string(cu[n]) + ")");
    if (static_cast<std::size_t>(cu.back()) != T)
      throw InputError("cu_seqlens", "ends at " + std::to_string(cu.back()) +
                                         ", expected T = " + std::to_string(T));
  }
}

/// \brief Every natural-log gate g <= 0 (decay exp(g) in (0, 1]).
template <Scalar S> void validate_log_gates(const Tensor<S> &g) {
  for (std::size_t i = 0; i < g.size(); ++i)
    if (g[i] > S(0))
      throw InputError("g", "element " + std::to_string(i) + " is a positive log-gate (" +
                                std::to_string(to_double(g[i])) + "); gates need g <= 0");
}

/// \brief Checks shapes, finiteness, gate signs, beta's range, chunk size and cu_seqlens.
template <Scalar S> void validate(const Inputs<S> &in, const Options &opts, const Signature &sig) {
  using detail::expect_finite;
  using detail::expect_shape;
  const auto [B, T, H, K, V] = validate_qkv(in);

  switch (sig.gate) {
  case GateKind::none:
    if (!in.g.empty())
      throw InputError("g", "this rule takes no gate");
    break;
  case GateKind::scalar: expect_shape("g", in.g.shape(), {B, T, H}); break;
  case GateKind::key: expect_shape("g", in.g.shape(), {B, T, H, K}); break;
  case GateKind::value: expect_shape("g", in.g.shape(), {B, T, H, V}); break;
  }
  if (sig.has_beta)
    expect_shape("beta", in.beta.shape(), {B, T, H});
  else if (!in.beta.empty())
    throw InputError("beta", "this rule takes no beta");
  if (sig.has_ab) {
    expect_shape("a", in.a.shape(), {B, T, H, K});
    expect_shape("b", in.b.shape(), {B, T, H, K});
  } else {
    if (!in.a.empty())
      throw InputError("a", "this rule takes no a");
    if (!in.b.empty())
      throw InputError("b", "this rule takes no b");
  }

  validate_sequences(opts.chunk_size, opts.cu_seqlens, B, T);
  const std::size_t N = opts.cu_seqlens.empty() ? B : opts.cu_seqlens.size() - 1;
  if (!in.h0.empty())
    expect_shape("initial_state", in.h0.shape(), {N, H, K, V + sig.extra_state_columns});

  expect_finite("q", in.q);
  expect_finite("k", in.k);
  expect_finite("v", in.v);
  expect_finite("g", in.g);
  expect_finite("beta", in.beta);
  expect_finite("initial_state", in.h0);
  expect_finite("a", in.a);
  expect_finite("b", in.b);
  validate_log_gates(in.g);
  const S low = from_double<S>(sig.beta_low), high = from_double<S>(sig.beta_high);
  for (std::size_t i = 0; i < in.beta.size(); ++i)
    if (!(in.beta[i] > low && (sig.beta_high_open ? in.beta[i] < high : in.beta[i] <= high)))
      throw InputError(
          "beta", "element " + std::to_string(i) + " = " + std::to_string(to_double(in.beta[i])) +
                      " is outside (" + std::to_string(sig.beta_low) + ", " +
                      std::to_string(sig.beta_high) + (sig.beta_high_open ? ")" : "]"));
}

/// \brief Checks the upstream gradients against the output shapes.
template <Scalar S> void validate_cotangents(const Cotangents<S> &ct, const Output<S> &out) {
  detail::expect_shape("do", ct.d_o.shape(), out.o.shape());
  if (!ct.d_ht.empty())
    detail::expect_shape("dht", ct.d_ht.shape(), out.final_state.shape());
  detail::expect_finite("do", ct.d_o);
  detail::expect_finite("dht", ct.d_ht);
}

} // namespace ruleproof
