// ruleproof: a part of a call as a call of its own: some rows of one sequence, some heads, from
// a given state. What the fault planting, the sampled certification of a truth and the checks
// of sub-sequences run the reference on.
#pragma once

#include "inputs.hpp"

namespace ruleproof {

/// \brief Which part of a call: rows [begin, end) of batch row `batch`, heads [head, head_end).
struct CallPart {
  std::size_t batch = 0, begin = 0, end = 0, head = 0, head_end = 0;
  std::size_t rows() const { return end - begin; }
  std::size_t heads() const { return head_end - head; }
};

/// The part of a [B, T, H, ...] tensor, as [1, rows, heads, ...], in S2 (empty stays empty).
template <class S2, class S> Tensor<S2> part_of(const Tensor<S> &x, const CallPart &p) {
  if (x.empty())
    return {};
  Shape shape = x.shape();
  const std::size_t H = shape[2], D = x.rank() == 4 ? shape[3] : 1;
  shape[0] = 1, shape[1] = p.rows(), shape[2] = p.heads();
  Tensor<S2> y(shape);
  for (std::size_t t = 0; t < p.rows(); ++t)
    for (std::size_t h = 0; h < p.heads(); ++h)
      for (std::size_t d = 0; d < D; ++d)
        y[(t * p.heads() + h) * D + d] =
            S2(x[((p.batch * x.dim(1) + p.begin + t) * H + p.head + h) * D + d]);
  return y;
}

/// State n of [N, H, K, V] states, heads of `p`, as [1, heads, K, V] in S2 (zeros when there
/// are none: a call without an initial state starts from zero).
template <class S2, class S>
Tensor<S2> state_part_of(const Tensor<S> &states, std::size_t n, const CallPart &p, std::size_t K,
                         std::size_t V) {
  Tensor<S2> s({1, p.heads(), K, V});
  if (!states.empty())
    for (std::size_t i = 0; i < s.size(); ++i)
      s[i] = S2(states[(n * states.dim(1) + p.head) * K * V + i]);
  return s;
}

/// \brief The inputs of part `p` of a call, starting from state h0 [1, heads, K, V].
template <class S2, class S>
Inputs<S2> part_of(const Inputs<S> &in, const CallPart &p, Tensor<S2> h0) {
  return {part_of<S2>(in.q, p), part_of<S2>(in.k, p),    part_of<S2>(in.v, p),
          part_of<S2>(in.g, p), part_of<S2>(in.beta, p), std::move(h0),
          part_of<S2>(in.a, p), part_of<S2>(in.b, p)};
}

/// The part of a call that sequence `seq` is, heads [head, head_end).
inline CallPart part_of(const Sequence &seq, std::size_t head, std::size_t head_end) {
  return {seq.batch, seq.begin, seq.end, head, head_end};
}

} // namespace ruleproof
