// ruleproof: every rule is written for one head of one sequence; this file cuts a call
// into those slices, runs them (in parallel when asked) and puts the results back.
#pragma once

#include <atomic>
#include <exception>
#include <mutex>
#include <thread>

#include "emulation.hpp"
#include "validate.hpp"

namespace ruleproof {

/// \brief One head of one sequence of length L, as matrices whose rows are time steps.
template <class S> struct Head {
  Mat<S> q, k;     ///< L x K
  Mat<S> v;        ///< L x V
  Mat<S> g;        ///< L x 1 (scalar gate), L x K (key), L x V (value), L x 0 (none)
  Vec<S> beta;     ///< L (empty when the rule has none)
  Mat<S> h0;       ///< K x V' initial state, zeros when none was given
  Mat<S> a{}, b{}; ///< L x K low-rank pair of DPLR / IPLR (L x 0 when the rule has none)
};

template <class S> struct HeadOutput {
  Mat<S> o;  ///< L x V
  Mat<S> ht; ///< K x V' final state
};

template <class S> struct HeadCotangent {
  Mat<S> d_o;  ///< L x V
  Mat<S> d_ht; ///< K x V', zeros when none was given
};

template <class S> struct HeadGrads {
  Mat<S> dq, dk, dv, dg;
  Vec<S> dbeta;
  Mat<S> dh0;
  Mat<S> da{}, db{}; ///< DPLR / IPLR only
};

/// The scale that multiplies q: the option, else K^-1/2 computed in S.
template <Scalar S> S scale_of(const Options &opts, std::size_t K) {
  using std::sqrt;
  return opts.scale ? from_double<S>(*opts.scale) : S(1) / sqrt(S(static_cast<int>(K)));
}

namespace detail {

/// Copies rows [seq.begin, seq.end) of head h of a [B, T, H, D] or [B, T, H] tensor.
template <class S> Mat<S> rows_of(const Tensor<S> &x, const Sequence &seq, std::size_t h) {
  if (x.empty())
    return Mat<S>(seq.length(), 0);
  const std::size_t D = x.rank() == 4 ? x.dim(3) : 1;
  Mat<S> m(seq.length(), D);
  for (std::size_t t = 0; t < seq.length(); ++t)
    for (std::size_t d = 0; d < D; ++d)
      m(t, d) = x.rank() == 4 ? x(seq.batch, seq.begin + t, h, d) : x(seq.batch, seq.begin + t, h);
  return m;
}

template <class S>
void put_rows(Tensor<S> &x, const Mat<S> &m, const Sequence &seq, std::size_t h) {
  for (std::size_t t = 0; t < seq.length(); ++t)
    for (std::size_t d = 0; d < static_cast<std::size_t>(m.cols()); ++d) {
      if (x.rank() == 4)
        x(seq.batch, seq.begin + t, h, d) = m(t, d);
      else
        x(seq.batch, seq.begin + t, h) = m(t, d);
    }
}

template <class S>
Mat<S> state_of(const Tensor<S> &x, std::size_t n, std::size_t h, std::size_t K, std::size_t V) {
  Mat<S> m = Mat<S>::Zero(K, V);
  if (!x.empty())
    for (std::size_t i = 0; i < K; ++i)
      for (std::size_t j = 0; j < V; ++j)
        m(i, j) = x(n, h, i, j);
  return m;
}

template <class S> void put_state(Tensor<S> &x, const Mat<S> &m, std::size_t n, std::size_t h) {
  for (std::size_t i = 0; i < static_cast<std::size_t>(m.rows()); ++i)
    for (std::size_t j = 0; j < static_cast<std::size_t>(m.cols()); ++j)
      x(n, h, i, j) = m(i, j);
}

/// Runs task(i) for i in [0, count) on up to `threads` threads, each with the calling thread's
/// emulated roundings (emulation.hpp); rethrows the first error.
template <class Task> void parallel_for(std::size_t count, unsigned threads, Task task) {
  if (threads <= 1 || count <= 1) {
    for (std::size_t i = 0; i < count; ++i)
      task(i);
    return;
  }
  std::atomic<std::size_t> next{0};
  std::exception_ptr error;
  std::mutex error_lock;
  std::vector<std::thread> pool;
  const emulation::Roundings roundings = emulation::active(); // the workers emulate alike
  for (unsigned w = 0; w < std::min<std::size_t>(threads, count); ++w)
    pool.emplace_back([&] {
      const emulation::Scope scope(roundings);
      for (std::size_t i; (i = next++) < count;) {
        try {
          task(i);
        } catch (...) {
          std::lock_guard<std::mutex> lock(error_lock);
          if (!error)
            error = std::current_exception();
        }
      }
    });
  for (auto &t : pool)
    t.join();
  if (error)
    std::rethrow_exception(error);
}

} // namespace detail

/// Cuts head h of sequence seq out of the inputs.
template <Scalar S>
Head<S> slice_head(const Inputs<S> &in, const Sequence &seq, std::size_t h, const Signature &sig) {
  const std::size_t K = in.q.dim(3), V = in.v.dim(3) + sig.extra_state_columns;
  return {detail::rows_of(in.q, seq, h),
          detail::rows_of(in.k, seq, h),
          detail::rows_of(in.v, seq, h),
          detail::rows_of(in.g, seq, h),
          in.beta.empty() ? Vec<S>() : Vec<S>(detail::rows_of(in.beta, seq, h).col(0)),
          detail::state_of(in.h0, seq.index, h, K, V),
          detail::rows_of(in.a, seq, h),
          detail::rows_of(in.b, seq, h)};
}

/// \brief Validates, then runs `form(head, scale)` on every head of every sequence.
template <Scalar S, class Form>
Output<S> forward_heads(const Inputs<S> &in, const Options &opts, const Signature &sig, Form form) {
  validate(in, opts, sig);
  const std::size_t B = in.q.dim(0), T = in.q.dim(1), H = in.q.dim(2), K = in.q.dim(3);
  const std::size_t V = in.v.dim(3);
  const auto seqs = sequences_of(B, T, opts);
  const S scale = scale_of<S>(opts, K);
  Output<S> out;
  out.o = Tensor<S>({B, T, H, V});
  if (opts.output_final_state)
    out.final_state = Tensor<S>({seqs.size(), H, K, V + sig.extra_state_columns});
  detail::parallel_for(seqs.size() * H, parallel_ok<S> ? opts.threads : 1, [&](std::size_t i) {
    const Sequence &seq = seqs[i / H];
    const std::size_t h = i % H;
    HeadOutput<S> r = form(slice_head(in, seq, h, sig), scale);
    detail::put_rows(out.o, r.o, seq, h);
    if (opts.output_final_state)
      detail::put_state(out.final_state, r.ht, seq.index, h);
  });
  return out;
}

/// \brief Validates, then runs `backward(head, cotangent, scale)` on every head of every
/// sequence and gathers the gradients.
template <Scalar S, class Backward>
Grads<S> backward_heads(const Inputs<S> &in, const Cotangents<S> &ct, const Options &opts,
                        const Signature &sig, Backward backward) {
  validate(in, opts, sig);
  const std::size_t B = in.q.dim(0), T = in.q.dim(1), H = in.q.dim(2), K = in.q.dim(3);
  const std::size_t V = in.v.dim(3), VS = V + sig.extra_state_columns;
  const auto seqs = sequences_of(B, T, opts);
  detail::expect_shape("do", ct.d_o.shape(), {B, T, H, V});
  if (!ct.d_ht.empty())
    detail::expect_shape("dht", ct.d_ht.shape(), {seqs.size(), H, K, VS});
  detail::expect_finite("do", ct.d_o);
  detail::expect_finite("dht", ct.d_ht);
  const S scale = scale_of<S>(opts, K);
  Grads<S> grads;
  grads.dq = Tensor<S>(in.q.shape());
  grads.dk = Tensor<S>(in.k.shape());
  grads.dv = Tensor<S>(in.v.shape());
  if (!in.g.empty())
    grads.dg = Tensor<S>(in.g.shape());
  if (!in.beta.empty())
    grads.dbeta = Tensor<S>(in.beta.shape());
  if (!in.h0.empty())
    grads.dh0 = Tensor<S>(in.h0.shape());
  if (!in.a.empty())
    grads.da = Tensor<S>(in.a.shape());
  if (!in.b.empty())
    grads.db = Tensor<S>(in.b.shape());
  detail::parallel_for(seqs.size() * H, parallel_ok<S> ? opts.threads : 1, [&](std::size_t i) {
    const Sequence &seq = seqs[i / H];
    const std::size_t h = i % H;
    HeadCotangent<S> cot{detail::rows_of(ct.d_o, seq, h),
                         detail::state_of(ct.d_ht, seq.index, h, K, VS)};
    HeadGrads<S> r = backward(slice_head(in, seq, h, sig), cot, scale);
    detail::put_rows(grads.dq, r.dq, seq, h);
    detail::put_rows(grads.dk, r.dk, seq, h);
    detail::put_rows(grads.dv, r.dv, seq, h);
    if (!in.g.empty())
      detail::put_rows(grads.dg, r.dg, seq, h);
    if (!in.beta.empty())
      detail::put_rows(grads.dbeta, Mat<S>(r.dbeta), seq, h);
    if (!in.h0.empty())
      detail::put_state(grads.dh0, r.dh0, seq.index, h);
    if (!in.a.empty())
      detail::put_rows(grads.da, r.da, seq, h);
    if (!in.b.empty())
      detail::put_rows(grads.db, r.db, seq, h);
  });
  return grads;
}

} // namespace ruleproof
