// ruleproof: the emulated twin of the GPU kernels (DESIGN.md, Precision), CPU only, and the
// reference's chunkwise stages laid out as the kernels lay out theirs.
//
// The twin is the reference chunkwise algorithm itself (reference/gla/chunk.hpp through
// gla.hpp and simple_gla.hpp; reference/kda/chunk.hpp through kda.hpp and
// gated_delta_rule.hpp; no rule is written again here) run with S = float on the inputs the
// kernel receives (q, k, v, do already rounded to bf16 or fp16; g, beta, h0, dht fp32), with
// every product and sum in fp32 (Eigen's float products), and its outputs rounded where the
// kernels store 16 bits: o, dq, dk, dv. Everything else the kernels keep in fp32 (g_cum, the
// states h, the scores A, the delta rules' A0, w, u, v_new, the final state, dg, dbeta, dh0),
// and so does the twin. Its error against the float128 truth, on the very same input, is what
// the kernels' precision allows; a kernel output passes when its own error is within a stated
// factor of it (gpu/check.hpp).
//
// Plain C++ (Eigen, no CUDA): never include this from a .cu file.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "detail/chunk_launch.hpp"
#include "kernel_rule.hpp"
#include "reference/core/float128.hpp"
#include "reference/gated_delta_rule/gated_delta_rule.hpp"
#include "reference/gla/gla.hpp"
#include "reference/kda/kda.hpp"
#include "reference/simple_gla/simple_gla.hpp"
#include "rounding.hpp"

namespace ruleproof::gpu {

/// \brief One stage intermediate, under the name the kernels and the reference give it.
template <class S> struct Stage {
  std::string name;
  Tensor<S> value;
};

/// \brief A chunkwise forward with the stages the kernels can return, in their layouts
/// (gpu/chunk_gla.hpp, gpu/chunk_delta.hpp): g_cum like g; h [NC, H, K, V] (the state at each
/// chunk's start, chunks of every sequence in order); scores (A, A0) [B, T, H, C] (row t
/// against column j of t's chunk, zero above the diagonal and past the chunk's end); w, u,
/// v_new like k, v, v. gla and simple_gla: g_cum, h, A (the scores of q~ and k); the delta
/// rules: g_cum, A0, A (= (I + A0)^-1), w, u, h, v_new.
template <class S> struct StagedForward {
  Output<S> out;
  std::vector<Stage<S>> stages;
};

/// The stage called `name` (std::out_of_range when there is none).
template <class S> Tensor<S> &stage(StagedForward<S> &f, const std::string &name) {
  for (Stage<S> &s : f.stages)
    if (s.name == name)
      return s.value;
  throw std::out_of_range("no stage " + name);
}
template <class S> const Tensor<S> &stage(const StagedForward<S> &f, const std::string &name) {
  return stage(const_cast<StagedForward<S> &>(f), name);
}

namespace twin_detail {

/// Chunk c's n x n scores into rows [seq.begin + c C, ...) of a [B, T, H, C] tensor.
template <class S>
void put_scores(Tensor<S> &x, const Mat<S> &A, const Sequence &seq, std::size_t h, std::size_t c,
                std::size_t C) {
  for (Eigen::Index a = 0; a < A.rows(); ++a)
    for (Eigen::Index b = 0; b < A.cols(); ++b)
      x(seq.batch, seq.begin + c * C + a, h, b) = A(a, b);
}

/// g_cum as the kernels keep it: one column for a scalar gate (the repeated gate's first).
template <class S> Mat<S> stored_g_cum(GateKind gate, const Mat<S> &g_cum) {
  return gate == GateKind::key ? g_cum : Mat<S>(g_cum.leftCols(1));
}

} // namespace twin_detail

/// \brief The reference's chunkwise forward of `rule` on every head of every sequence, with
/// its stages laid out as the kernels lay them out. Runs gla::chunk_forward_head (simple_gla:
/// on the gate repeated over the keys, simple_gla::as_key_gate) or kda::chunk_forward_head
/// (gated_delta_rule: on kda::as_kda's head), as the rules' own chunk forms do.
template <Scalar S>
StagedForward<S> chunk_forward_staged(KernelRule rule, const Inputs<S> &in, const Options &opts) {
  const GateKind gate = gate_of(rule);
  const Signature &sig = rule == KernelRule::gla                ? gla::signature
                         : rule == KernelRule::simple_gla       ? simple_gla::signature
                         : rule == KernelRule::gated_delta_rule ? gated_delta_rule::signature
                                                                : kda::signature;
  validate(in, opts, sig);
  const std::size_t B = in.q.dim(0), T = in.q.dim(1), H = in.q.dim(2), K = in.q.dim(3);
  const std::size_t V = in.v.dim(3), C = opts.chunk_size;
  const auto seqs = sequences_of(B, T, opts);
  std::vector<std::size_t> first_chunk{0}; // chunks of the sequences before each one
  for (const Sequence &s : seqs)
    first_chunk.push_back(first_chunk.back() + (s.length() + C - 1) / C);
  StagedForward<S> r;
  r.out.o = Tensor<S>({B, T, H, V});
  if (opts.output_final_state)
    r.out.final_state = Tensor<S>({seqs.size(), H, K, V});
  for (const char *name : stage_names(rule)) {
    const std::string n = name;
    const Shape shape = n == "g_cum"            ? in.g.shape()
                        : n == "A0" || n == "A" ? Shape{B, T, H, C}
                        : n == "w"              ? Shape{B, T, H, K}
                        : n == "h"              ? Shape{first_chunk.back(), H, K, V}
                                                : Shape{B, T, H, V}; // u, v_new
    r.stages.push_back({n, Tensor<S>(shape)});
  }
  Tensor<S> &g_cum = stage(r, "g_cum"), &A = stage(r, "A"), &h_stage = stage(r, "h");
  Tensor<S> *A0 = nullptr, *w = nullptr, *u = nullptr, *v_new = nullptr;
  if (is_delta(rule)) {
    A0 = &stage(r, "A0");
    w = &stage(r, "w");
    u = &stage(r, "u");
    v_new = &stage(r, "v_new");
  }
  const S scale = scale_of<S>(opts, K);
  using ruleproof::detail::put_rows;
  using ruleproof::detail::put_state;
  ruleproof::detail::parallel_for(
      seqs.size() * H, parallel_ok<S> ? opts.threads : 1, [&](std::size_t i) {
        const Sequence &seq = seqs[i / H];
        const std::size_t h = i % H;
        const Head<S> x = slice_head(in, seq, h, sig);
        HeadOutput<S> out;
        Mat<S> g_cum_head;
        std::vector<Mat<S>> states, scores;
        if (is_delta(rule)) {
          kda::ChunkForward<S> f =
              kda::chunk_forward_head(kda::as_kda(x, gate, kda::Variant{}), scale, C, gate);
          out = std::move(f.out);
          g_cum_head = std::move(f.stages.g_cum);
          states = std::move(f.stages.h);
          scores = std::move(f.stages.A);
          for (std::size_t c = 0; c < f.stages.A0.size(); ++c)
            twin_detail::put_scores(*A0, f.stages.A0[c], seq, h, c, C);
          put_rows(*w, f.stages.w, seq, h);
          put_rows(*u, f.stages.u, seq, h);
          put_rows(*v_new, f.stages.v_new, seq, h);
        } else {
          gla::ChunkForward<S> f = gla::chunk_forward_head(
              gate == GateKind::scalar ? simple_gla::as_key_gate(x) : x, scale, C);
          out = std::move(f.out);
          g_cum_head = std::move(f.stages.g_cum);
          states = std::move(f.stages.h);
          scores = std::move(f.stages.A);
        }
        put_rows(r.out.o, out.o, seq, h);
        if (opts.output_final_state)
          put_state(r.out.final_state, out.ht, seq.index, h);
        put_rows(g_cum, twin_detail::stored_g_cum(gate, g_cum_head), seq, h);
        for (std::size_t c = 0; c < states.size(); ++c) {
          put_state(h_stage, states[c], first_chunk[seq.index] + c, h);
          twin_detail::put_scores(A, scores[c], seq, h, c, C);
        }
      });
  return r;
}

/// \brief The reference's chunkwise analytic backward of `rule`.
template <Scalar S>
Grads<S> chunk_backward(KernelRule rule, const Inputs<S> &in, const Cotangents<S> &ct,
                        const Options &opts) {
  switch (rule) {
  case KernelRule::simple_gla: return simple_gla::chunk_backward(in, ct, opts);
  case KernelRule::gla: return gla::chunk_backward(in, ct, opts);
  case KernelRule::gated_delta_rule: return gated_delta_rule::chunk_backward(in, ct, opts);
  case KernelRule::kda: return kda::chunk_backward(in, ct, opts);
  }
  return {};
}

/// \brief The stored inputs widened to float128 for the truth (exactly: every float is one),
/// and a truth read back as double for judging.
inline Tensor<float128> widen(const Tensor<float> &t) {
  return t.map<float128>([](float x) { return float128(x); });
}
inline Inputs<float128> widen(const Inputs<float> &in) {
  return {widen(in.q), widen(in.k), widen(in.v), widen(in.g), widen(in.beta), widen(in.h0)};
}
inline Cotangents<float128> widen(const Cotangents<float> &ct) {
  return {widen(ct.d_o), widen(ct.d_ht)};
}
template <class S> Tensor<double> to_double_tensor(const Tensor<S> &t) {
  return t.template map<double>([](const S &x) { return to_double(x); });
}

/// Every element of x rounded to the storage type t.
inline Tensor<float> rounded(DType t, Tensor<float> x) {
  for (std::size_t i = 0; i < x.size(); ++i)
    x[i] = round_to(t, x[i]);
  return x;
}

/// \brief The inputs as a kernel of storage type t receives them: q, k, v rounded to t;
/// g, beta, h0 (fp32 on the device) as they are.
inline Inputs<float> as_stored(DType t, Inputs<float> in) {
  in.q = rounded(t, std::move(in.q));
  in.k = rounded(t, std::move(in.k));
  in.v = rounded(t, std::move(in.v));
  return in;
}

/// \brief The upstream gradients as the kernel receives them: do in the storage type t,
/// dht fp32.
inline Cotangents<float> as_stored(DType t, Cotangents<float> ct) {
  ct.d_o = rounded(t, std::move(ct.d_o));
  return ct;
}

/// \brief The twin's forward: the reference in fp32 at the kernels' chunk size, on stored
/// inputs (as_stored), o rounded to the storage type t.
inline StagedForward<float> twin_forward(KernelRule rule, DType t, const Inputs<float> &stored,
                                         Options opts) {
  opts.chunk_size = kernel_chunk_size;
  StagedForward<float> r = chunk_forward_staged(rule, stored, opts);
  r.out.o = rounded(t, std::move(r.out.o));
  return r;
}

/// \brief The twin's backward: the reference's analytic backward in fp32 at the kernels'
/// chunk size, dq, dk, dv rounded to the storage type t (dg, dbeta, dh0 stay fp32).
inline Grads<float> twin_backward(KernelRule rule, DType t, const Inputs<float> &stored,
                                  const Cotangents<float> &ct_stored, Options opts) {
  opts.chunk_size = kernel_chunk_size;
  Grads<float> g = chunk_backward(rule, stored, ct_stored, opts);
  g.dq = rounded(t, std::move(g.dq));
  g.dk = rounded(t, std::move(g.dk));
  g.dv = rounded(t, std::move(g.dv));
  return g;
}

} // namespace ruleproof::gpu
