// ruleproof property checks: cutting a call along time (and its states by sequence) and
// putting the pieces back, as the varlen, halves and causality properties of every rule
// (properties.hpp) and of sympow (sympow_checks.hpp) do.
#pragma once

#include "reference/core/gradients.hpp"
#include "reference/core/inputs.hpp"

namespace ruleproof::checks {

/// Time steps [begin, end) of every batch row; gates follow; the state is left as is.
template <class S> Tensor<S> time_slice(const Tensor<S> &x, std::size_t begin, std::size_t end) {
  if (x.empty())
    return x;
  Shape shape = x.shape();
  const std::size_t T = shape[1];
  shape[1] = end - begin;
  const std::size_t inner = element_count(x.shape()) / (shape[0] * (T ? T : 1));
  Tensor<S> out(shape);
  if (T == 0)
    return out;
  for (std::size_t b = 0; b < shape[0]; ++b)
    for (std::size_t t = begin; t < end; ++t)
      for (std::size_t i = 0; i < inner; ++i)
        out[(b * shape[1] + (t - begin)) * inner + i] = x[(b * T + t) * inner + i];
  return out;
}

/// Writes the rows of `part` ([B, T', ...]) into `x` at time offset `begin`.
template <class S> void put_time_slice(Tensor<S> &x, const Tensor<S> &part, std::size_t begin) {
  if (part.size() == 0)
    return;
  const std::size_t T = x.dim(1), Tp = part.dim(1), B = x.dim(0);
  const std::size_t inner = part.size() / (B * Tp);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < Tp; ++t)
      for (std::size_t i = 0; i < inner; ++i)
        x[(b * T + begin + t) * inner + i] = part[(b * Tp + t) * inner + i];
}

/// Every per-step input cut to [begin, end); the initial state stays.
template <class S> Inputs<S> time_slice(const Inputs<S> &in, std::size_t begin, std::size_t end) {
  Inputs<S> out = in;
  for (const auto &f : grad_fields<S>())
    if (f.input != &Inputs<S>::h0)
      out.*f.input = time_slice(in.*f.input, begin, end);
  return out;
}

/// The call `in` with every per-step input at t >= P taken from `later` (same shapes): the
/// inputs of the causality property. The initial state stays.
template <class S>
Inputs<S> with_later_inputs(const Inputs<S> &in, const Inputs<S> &later, std::size_t P) {
  Inputs<S> out = in;
  for (const auto &f : grad_fields<S>())
    if (f.input != &Inputs<S>::h0 && !(later.*f.input).empty())
      put_time_slice(out.*f.input, time_slice(later.*f.input, P, (later.*f.input).dim(1)), P);
  return out;
}

namespace detail {

/// State n of [N, H, K, V'] as a [1, H, K, V'] tensor (empty stays empty).
template <class S> Tensor<S> state_slice(const Tensor<S> &x, std::size_t n) {
  if (x.empty())
    return x;
  Shape shape = x.shape();
  shape[0] = 1;
  Tensor<S> out(shape);
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = x[n * out.size() + i];
  return out;
}

template <class S> void put_state_slice(Tensor<S> &x, const Tensor<S> &part, std::size_t n) {
  for (std::size_t i = 0; i < part.size(); ++i)
    x[n * part.size() + i] = part[i];
}

} // namespace detail

} // namespace ruleproof::checks
