// ruleproof: the arguments every rule and form takes, and their checks.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "tensor.hpp"

namespace ruleproof {

/// \brief The tensors of one call, in the one argument order every rule and form uses:
/// q, k, v, g, beta, then the initial state, then the low-rank pair a, b of DPLR and IPLR
/// (last, so that older aggregate initialisations still compile). Unused ones stay empty.
template <class S> struct Inputs {
  Tensor<S> q;    ///< [B, T, H, K]
  Tensor<S> k;    ///< [B, T, H, K]
  Tensor<S> v;    ///< [B, T, H, V]
  Tensor<S> g;    ///< natural-log gate, g <= 0: [B, T, H] scalar, [B, T, H, K] per key
  Tensor<S> beta; ///< [B, T, H]
  Tensor<S> h0;   ///< initial state [N, H, K, V]
  Tensor<S> a{};  ///< [B, T, H, K], DPLR / IPLR only
  Tensor<S> b{};  ///< [B, T, H, K], DPLR / IPLR only
};

/// \brief Everything that is not a differentiable tensor.
struct Options {
  std::optional<double> scale;          ///< multiplies q; default K^-1/2
  std::size_t chunk_size = 64;          ///< C >= 1, for chunkwise forms
  std::vector<std::int64_t> cu_seqlens; ///< N+1 offsets with B == 1; empty: one sequence a batch
  bool output_final_state = true;
  unsigned threads = 1; ///< heads and sequences run in parallel across this many threads
};

/// \brief Outputs of a forward pass: `o` [B, T, H, V], `final_state` [N, H, K, V].
template <class S> struct Output {
  Tensor<S> o;
  Tensor<S> final_state;
};

/// \brief Upstream gradients of the loss <dO, O> + <dS_T, S_T>.
template <class S> struct Cotangents {
  Tensor<S> d_o;  ///< like o
  Tensor<S> d_ht; ///< like final_state; empty means zero
};

/// \brief Gradients of the loss, one per input, same shapes (empty where the input is).
template <class S> struct Grads {
  Tensor<S> dq, dk, dv, dg, dbeta, dh0;
  Tensor<S> da{}, db{}; ///< DPLR / IPLR only
};

/// \brief The error a caller made: which tensor or option, and what is wrong with it.
class InputError : public std::invalid_argument {
public:
  InputError(const std::string &what_input, const std::string &problem)
      : std::invalid_argument(what_input + ": " + problem), input_(what_input) {}
  const std::string &input() const { return input_; }

private:
  std::string input_;
};

/// One sequence of a call: batch row `batch`, time steps [begin, end), state index `index`.
struct Sequence {
  std::size_t batch, begin, end, index;
  std::size_t length() const { return end - begin; }
};

/// The sequences of a call: one per batch row, or those `cu_seqlens` cuts out of row 0.
inline std::vector<Sequence> sequences_of(std::size_t B, std::size_t T, const Options &opts) {
  std::vector<Sequence> seqs;
  if (opts.cu_seqlens.empty()) {
    for (std::size_t b = 0; b < B; ++b)
      seqs.push_back({b, 0, T, b});
    return seqs;
  }
  for (std::size_t n = 0; n + 1 < opts.cu_seqlens.size(); ++n)
    seqs.push_back({0, static_cast<std::size_t>(opts.cu_seqlens[n]),
                    static_cast<std::size_t>(opts.cu_seqlens[n + 1]), n});
  return seqs;
}

} // namespace ruleproof
