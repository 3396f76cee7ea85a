// ruleproof: the emulated twin of the GPU kernels (DESIGN.md, Precision), CPU only, and the
// reference's chunkwise stages laid out as the kernels lay out theirs.
//
// The twin is the reference chunkwise algorithm itself (reference/gla/chunk.hpp, through
// gla.hpp and simple_gla.hpp; no rule is written again here) run with S = float on the
// inputs the kernel receives (q, k, v, do already rounded to bf16 or fp16; g, h0, dht fp32),
// with every product and sum in fp32 (Eigen's float products), and its outputs rounded where
// the kernels store 16 bits: o, dq, dk, dv. Everything else the kernels keep in fp32 (g_cum,
// the states h, the scores A, the final state, dg, dh0), and so does the twin. Its error
// against the float128 truth, on the very same input, is what the kernels' precision
// allows; a kernel output passes when its own error is within a stated factor of it
// (gpu/check.hpp).
//
// Plain C++ (Eigen, no CUDA): never include this from a .cu file.
#pragma once

#include "detail/gla_launch.hpp"
#include "reference/gla/gla.hpp"
#include "reference/simple_gla/simple_gla.hpp"
#include "rounding.hpp"

namespace ruleproof::gpu {

/// \brief A chunkwise forward with the stages the kernels can return, in their layouts
/// (gpu/chunk_gla.hpp): g_cum like g; h [NC, H, K, V] (the state at each chunk's start, chunks
/// of every sequence in order); A [B, T, H, C] (row t against column j of t's chunk, zero
/// above the diagonal and past the chunk's end).
template <class S> struct StagedForward {
  Output<S> out;
  Tensor<S> g_cum, h, A;
};

/// \brief The reference's chunkwise forward of gla (GateKind::key) or simple_gla
/// (GateKind::scalar) on every head of every sequence, with its stages laid out as the
/// kernels lay them out. Runs gla::chunk_forward_head (simple_gla: on the gate repeated over
/// the keys, simple_gla::as_key_gate), as gla::chunk and simple_gla::chunk do.
template <Scalar S>
StagedForward<S> chunk_gla_forward_staged(GateKind gate, const Inputs<S> &in, const Options &opts) {
  const Signature &sig = gate == GateKind::key ? gla::signature : simple_gla::signature;
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
  r.g_cum = Tensor<S>(in.g.shape());
  r.h = Tensor<S>({first_chunk.back(), H, K, V});
  r.A = Tensor<S>({B, T, H, C});
  const S scale = scale_of<S>(opts, K);
  ruleproof::detail::parallel_for(
      seqs.size() * H, parallel_ok<S> ? opts.threads : 1, [&](std::size_t i) {
        const Sequence &seq = seqs[i / H];
        const std::size_t h = i % H;
        Head<S> x = slice_head(in, seq, h, sig);
        if (gate == GateKind::scalar)
          x = simple_gla::as_key_gate(std::move(x));
        const gla::ChunkForward<S> f = gla::chunk_forward_head(x, scale, C);
        ruleproof::detail::put_rows(r.out.o, f.out.o, seq, h);
        if (opts.output_final_state)
          ruleproof::detail::put_state(r.out.final_state, f.out.ht, seq.index, h);
        // simple_gla's g_cum has one column (the repeated gate's first)
        const Mat<S> g_cum =
            gate == GateKind::key ? f.stages.g_cum : Mat<S>(f.stages.g_cum.leftCols(1));
        ruleproof::detail::put_rows(r.g_cum, g_cum, seq, h);
        for (std::size_t c = 0; c < f.stages.h.size(); ++c) {
          ruleproof::detail::put_state(r.h, f.stages.h[c], first_chunk[seq.index] + c, h);
          const Mat<S> &A = f.stages.A[c];
          for (Eigen::Index a = 0; a < A.rows(); ++a)
            for (Eigen::Index b = 0; b < A.cols(); ++b)
              r.A(seq.batch, seq.begin + c * C + a, h, b) = A(a, b);
        }
      });
  return r;
}

/// \brief The reference's chunkwise analytic backward of gla or simple_gla.
template <Scalar S>
Grads<S> chunk_gla_backward(GateKind gate, const Inputs<S> &in, const Cotangents<S> &ct,
                            const Options &opts) {
  return gate == GateKind::key ? gla::chunk_backward(in, ct, opts)
                               : simple_gla::chunk_backward(in, ct, opts);
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
inline StagedForward<float> twin_forward(GateKind gate, DType t, const Inputs<float> &stored,
                                         Options opts) {
  opts.chunk_size = kernel_chunk_size;
  StagedForward<float> r = chunk_gla_forward_staged(gate, stored, opts);
  r.out.o = rounded(t, std::move(r.out.o));
  return r;
}

/// \brief The twin's backward: the reference's analytic backward in fp32 at the kernels'
/// chunk size, dq, dk, dv rounded to the storage type t (dg, dh0 stay fp32).
inline Grads<float> twin_backward(GateKind gate, DType t, const Inputs<float> &stored,
                                  const Cotangents<float> &ct_stored, Options opts) {
  opts.chunk_size = kernel_chunk_size;
  Grads<float> g = chunk_gla_backward(gate, stored, ct_stored, opts);
  g.dq = rounded(t, std::move(g.dq));
  g.dk = rounded(t, std::move(g.dk));
  g.dv = rounded(t, std::move(g.dv));
  return g;
}

} // namespace ruleproof::gpu
