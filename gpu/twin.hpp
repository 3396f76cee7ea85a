// ruleproof: the emulated twin of a kernel (DESIGN.md, Precision), CPU only, under a named
// precision policy, and the reference's chunkwise stages laid out as the kernels lay out theirs.
//
// The twin is the reference chunkwise algorithm itself (reference/gla/chunk.hpp through
// gla.hpp and simple_gla.hpp; reference/kda/chunk.hpp through kda.hpp and
// gated_delta_rule.hpp; reference/dplr/chunk.hpp through dplr.hpp with flash-linear-attention's
// parameterisation; reference/gated_oja/chunk.hpp through gated_oja.hpp; no rule is written
// again here) run with S = float on the inputs the kernel receives (q, k, v, dplr's a and b, do
// in the kernel's 16-bit type; the gates, beta, h0, dht as stored), with the arithmetic of the
// policy (reference/core/emulation.hpp):
//   fp32         every product and sum in fp32, intermediates in fp32: kernels whose products
//                run on CUDA cores (this project's own, gpu/chunk_*.cu);
//   tensor-core  the two operands of every matrix product rounded to the input type (bf16 or
//                fp16), sums in fp32, and the intermediates a chunkwise kernel stores between its
//                stages (the WY factors and the inverted triangle, u or c, the per-chunk states
//                h and dh, v_new or v2, dv) rounded to the input type; cumulative gates,
//                exponentials, elementwise products and running states fp32: the Triton and
//                CUDA kernels of flash-linear-attention and its like;
//   tf32         the same with tf32 operands (fp32's range, 11 significand bits) and fp32
//                intermediates: a kernel of fp32 inputs whose products run on tensor cores.
// Each output is then rounded to the type the kernel stores it in. The twin's error against the
// float128 truth, on the very same input, is what a kernel of that precision incurs; a kernel
// output passes when its own error is within a stated factor of it (gpu/check.hpp).
//
// Plain C++ (Eigen, no CUDA): never include this from a .cu file.
#pragma once

#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "detail/chunk_launch.hpp"
#include "kernel_rule.hpp"
#include "reference/core/emulation.hpp"
#include "reference/core/float128.hpp"
#include "reference/dplr/dplr.hpp"
#include "reference/gated_delta_rule/gated_delta_rule.hpp"
#include "reference/gated_oja/gated_oja.hpp"
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
/// rules: g_cum, A0, A (= (I + A0)^-1), w, u, h, v_new; dplr_fla: g_cum, A_qk, A_qa, A_ba, A_bk,
/// E (= (I + A_ba)^-1), w, c, h, v2 (reference/dplr/chunk.hpp); gated_oja: g_cum, A0, A, w, u,
/// h, k_new (reference/gated_oja/chunk.hpp; its w like v, its u like k).
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
  return gate == GateKind::scalar ? Mat<S>(g_cum.leftCols(1)) : g_cum;
}

/// The reference's signature of a kernel rule.
inline const Signature &signature_of(KernelRule rule) {
  switch (rule) {
  case KernelRule::gla: return gla::signature;
  case KernelRule::simple_gla: return simple_gla::signature;
  case KernelRule::gated_delta_rule: return gated_delta_rule::signature;
  case KernelRule::kda: return kda::signature;
  case KernelRule::dplr_fla: return dplr::signature;
  case KernelRule::gated_oja: return gated_oja::signature;
  }
  return gla::signature;
}

/// The shape of stage `name` of `rule` (twin.hpp's StagedForward says which).
inline Shape stage_shape(KernelRule rule, const std::string &name, const Shape &g_shape,
                         std::size_t B, std::size_t T, std::size_t H, std::size_t K, std::size_t V,
                         std::size_t NC, std::size_t C) {
  if (name == "g_cum")
    return g_shape;
  if (name == "h")
    return {NC, H, K, V};
  if (name == "A0" || name == "A" || name == "A_qk" || name == "A_qa" || name == "A_ba" ||
      name == "A_bk" || name == "E")
    return {B, T, H, C};
  const bool oja = rule == KernelRule::gated_oja;
  if (name == "k_new" || (name == "w" && !oja) || (name == "u" && oja))
    return {B, T, H, K};
  return {B, T, H, V}; // u, w (gated_oja), v_new, c, v2
}

} // namespace twin_detail

/// \brief The reference's chunkwise forward of `rule` on every head of every sequence, with
/// its stages laid out as the kernels lay them out. Runs gla::chunk_forward_head (simple_gla:
/// on the gate repeated over the keys, simple_gla::as_key_gate), kda::chunk_forward_head
/// (gated_delta_rule: on kda::as_kda's head), dplr::chunk_forward_head (on dplr::as_core's head
/// of flash-linear-attention's parameterisation) or gated_oja::chunk_forward_head, as the
/// rules' own chunk forms do.
template <Scalar S>
StagedForward<S> chunk_forward_staged(KernelRule rule, const Inputs<S> &in, const Options &opts) {
  const GateKind gate = gate_of(rule);
  const Signature &sig = twin_detail::signature_of(rule);
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
  for (const char *name : stage_names(rule))
    r.stages.push_back({name, Tensor<S>(twin_detail::stage_shape(rule, name, in.g.shape(), B, T, H,
                                                                 K, V, first_chunk.back(), C))});
  const S scale = scale_of<S>(opts, K);
  using ruleproof::detail::put_rows;
  using ruleproof::detail::put_state;
  ruleproof::detail::parallel_for(
      seqs.size() * H, parallel_ok<S> ? opts.threads : 1, [&](std::size_t i) {
        const Sequence &seq = seqs[i / H];
        const std::size_t h = i % H;
        const Head<S> x = slice_head(in, seq, h, sig);
        const auto rows = [&](const char *name, const Mat<S> &m) {
          put_rows(stage(r, name), m, seq, h);
        };
        const auto chunks = [&](const char *name, const std::vector<Mat<S>> &scores) {
          for (std::size_t c = 0; c < scores.size(); ++c)
            twin_detail::put_scores(stage(r, name), scores[c], seq, h, c, C);
        };
        HeadOutput<S> out;
        Mat<S> g_cum_head;
        std::vector<Mat<S>> states;
        switch (rule) {
        case KernelRule::gated_delta_rule:
        case KernelRule::kda: {
          kda::ChunkForward<S> f =
              kda::chunk_forward_head(kda::as_kda(x, gate, kda::Variant{}), scale, C, gate);
          chunks("A0", f.stages.A0);
          chunks("A", f.stages.A);
          rows("w", f.stages.w);
          rows("u", f.stages.u);
          rows("v_new", f.stages.v_new);
          out = std::move(f.out);
          g_cum_head = std::move(f.stages.g_cum);
          states = std::move(f.stages.h);
          break;
        }
        case KernelRule::dplr_fla: {
          dplr::ChunkForward<S> f =
              dplr::chunk_forward_head(dplr::as_core(x, dplr::Parameterisation::fla), scale, C);
          chunks("A_qk", f.stages.intra.A_qk);
          chunks("A_qa", f.stages.intra.A_qa);
          chunks("A_ba", f.stages.intra.A_ba);
          chunks("A_bk", f.stages.intra.A_bk);
          chunks("E", f.stages.E);
          rows("w", f.stages.w);
          rows("c", f.stages.c);
          rows("v2", f.stages.v2);
          out = std::move(f.out);
          g_cum_head = std::move(f.stages.g_cum);
          states = std::move(f.stages.h);
          break;
        }
        case KernelRule::gated_oja: {
          gated_oja::ChunkForward<S> f = gated_oja::chunk_forward_head(x, scale, C);
          chunks("A0", f.stages.A0);
          chunks("A", f.stages.A);
          rows("w", f.stages.w);
          rows("u", f.stages.u);
          rows("k_new", f.stages.k_new);
          out = std::move(f.out);
          g_cum_head = std::move(f.stages.g_cum);
          states = std::move(f.stages.h);
          break;
        }
        case KernelRule::simple_gla:
        case KernelRule::gla: {
          gla::ChunkForward<S> f = gla::chunk_forward_head(
              gate == GateKind::scalar ? simple_gla::as_key_gate(x) : x, scale, C);
          chunks("A", f.stages.A);
          out = std::move(f.out);
          g_cum_head = std::move(f.stages.g_cum);
          states = std::move(f.stages.h);
          break;
        }
        }
        put_rows(r.out.o, out.o, seq, h);
        if (opts.output_final_state)
          put_state(r.out.final_state, out.ht, seq.index, h);
        rows("g_cum", twin_detail::stored_g_cum(gate, g_cum_head));
        for (std::size_t c = 0; c < states.size(); ++c)
          put_state(stage(r, "h"), states[c], first_chunk[seq.index] + c, h);
      });
  return r;
}

/// \brief The reference's chunkwise forward of `rule`, its outputs alone (no stages laid out).
template <Scalar S>
Output<S> chunk_forward(KernelRule rule, const Inputs<S> &in, const Options &opts) {
  switch (rule) {
  case KernelRule::simple_gla: return simple_gla::chunk(in, opts);
  case KernelRule::gla: return gla::chunk(in, opts);
  case KernelRule::gated_delta_rule: return gated_delta_rule::chunk(in, opts);
  case KernelRule::kda: return kda::chunk(in, opts);
  case KernelRule::dplr_fla:
    return dplr::chunk(in, opts, dplr::Variant{dplr::Parameterisation::fla});
  case KernelRule::gated_oja: return gated_oja::chunk(in, opts);
  }
  return {};
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
  case KernelRule::dplr_fla:
    return dplr::chunk_backward(in, ct, opts, dplr::Variant{dplr::Parameterisation::fla});
  case KernelRule::gated_oja: return gated_oja::chunk_backward(in, ct, opts);
  }
  return {};
}

// The three forms are compiled once for each scalar the checks use, in gpu/twin_float.cpp (the
// twin), twin_double.cpp and twin_float128.cpp (the truth), not in every file that includes this.
extern template StagedForward<float> chunk_forward_staged(KernelRule, const Inputs<float> &,
                                                          const Options &);
extern template StagedForward<double> chunk_forward_staged(KernelRule, const Inputs<double> &,
                                                           const Options &);
extern template StagedForward<float128> chunk_forward_staged(KernelRule, const Inputs<float128> &,
                                                             const Options &);
extern template Output<float> chunk_forward(KernelRule, const Inputs<float> &, const Options &);
extern template Output<double> chunk_forward(KernelRule, const Inputs<double> &, const Options &);
extern template Output<float128> chunk_forward(KernelRule, const Inputs<float128> &,
                                               const Options &);
extern template Grads<float> chunk_backward(KernelRule, const Inputs<float> &,
                                            const Cotangents<float> &, const Options &);
extern template Grads<double> chunk_backward(KernelRule, const Inputs<double> &,
                                             const Cotangents<double> &, const Options &);
extern template Grads<float128> chunk_backward(KernelRule, const Inputs<float128> &,
                                               const Cotangents<float128> &, const Options &);

/// \brief The stored inputs widened to float128 for the truth (exactly: every float is one),
/// and a truth read back as double for judging.
inline Tensor<float128> widen(const Tensor<float> &t) {
  return t.map<float128>([](float x) { return float128(x); });
}
inline Inputs<float128> widen(const Inputs<float> &in) {
  return {widen(in.q),    widen(in.k),  widen(in.v), widen(in.g),
          widen(in.beta), widen(in.h0), widen(in.a), widen(in.b)};
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

/// \brief The inputs as a kernel of storage type t receives them: q, k, v (and dplr's a, b)
/// rounded to t; g, beta, h0 (fp32 on the device) as they are.
inline Inputs<float> as_stored(DType t, Inputs<float> in) {
  in.q = rounded(t, std::move(in.q));
  in.k = rounded(t, std::move(in.k));
  in.v = rounded(t, std::move(in.v));
  in.a = rounded(t, std::move(in.a));
  in.b = rounded(t, std::move(in.b));
  return in;
}

/// \brief The upstream gradients as the kernel receives them: do in the storage type t,
/// dht fp32.
inline Cotangents<float> as_stored(DType t, Cotangents<float> ct) {
  ct.d_o = rounded(t, std::move(ct.d_o));
  return ct;
}

/// \brief The precision policies of the twin (see the top of this file).
enum class Policy { fp32, tensor_core, tf32 };
inline constexpr Policy all_policies[] = {Policy::fp32, Policy::tensor_core, Policy::tf32};

inline std::string policy_name(Policy p) {
  switch (p) {
  case Policy::fp32: return "fp32";
  case Policy::tensor_core: return "tensor-core";
  case Policy::tf32: return "tf32";
  }
  return "?";
}

inline std::optional<Policy> policy_of(const std::string &name) {
  for (Policy p : all_policies)
    if (policy_name(p) == name)
      return p;
  return std::nullopt;
}

/// Significand bits of a format (the leading one counted): its unit roundoff is 2^-bits.
inline int significand_bits(DType t) { return t == DType::bf16 ? 8 : t == DType::fp16 ? 11 : 24; }
constexpr int tf32_bits = 11; ///< tf32: fp32's exponent, 10 stored significand bits

/// \brief What policy p rounds for a kernel whose inputs q, k, v are stored in t; std::nullopt
/// when it cannot apply: tensor-core rounds to the 16-bit input type, so it needs one (a kernel
/// of fp32 inputs on tensor cores is tf32's).
inline std::optional<emulation::Roundings> roundings(Policy p, DType t) {
  switch (p) {
  case Policy::fp32: return emulation::Roundings{};
  case Policy::tensor_core:
    if (t != DType::bf16 && t != DType::fp16)
      return std::nullopt;
    return emulation::Roundings{significand_bits(t), significand_bits(t)};
  case Policy::tf32: return emulation::Roundings{tf32_bits, 24};
  }
  return std::nullopt;
}

/// The roundings of p for inputs of type t; std::invalid_argument naming both when p cannot
/// apply.
inline emulation::Roundings roundings_or_throw(Policy p, DType t) {
  if (const auto r = roundings(p, t))
    return *r;
  throw std::invalid_argument("the " + policy_name(p) + " policy rounds products to a 16-bit " +
                              "input type (bf16 or fp16); these inputs are " + dtype_name(t) +
                              " (use tf32 or fp32)");
}

/// The unit roundoff 2^-bits of a rounding to `bits` significand bits.
inline double roundoff(int bits) { return std::ldexp(1.0, -bits); }

/// \brief The type each output is stored in, by its name (o, final_state, dq, dk, dv, dg, dbeta,
/// da, db, dh0): what the twin rounds it to.
struct OutputTypes {
  DType o = DType::bf16, final_state = DType::fp32;
  DType dq = DType::bf16, dk = DType::bf16, dv = DType::bf16, dg = DType::fp32;
  DType dbeta = DType::fp32, da = DType::bf16, db = DType::bf16, dh0 = DType::fp32;
  /// The kernels of this project (gpu/chunk_*.cu): o, dq, dk, dv, da, db in the input type t,
  /// the rest fp32.
  static OutputTypes kernels_of(DType t) {
    OutputTypes r;
    r.o = r.dq = r.dk = r.dv = r.da = r.db = t;
    return r;
  }
};

/// \brief The twin's forward: the reference at the kernel's chunk size (opts.chunk_size) under
/// policy p, on stored inputs (as_stored) of type t; o and the final state rounded to their
/// types.
inline StagedForward<float> twin_forward(KernelRule rule, Policy p, DType t,
                                         const Inputs<float> &stored, const Options &opts,
                                         const OutputTypes &types) {
  const emulation::Scope scope(roundings_or_throw(p, t));
  StagedForward<float> r = chunk_forward_staged(rule, stored, opts);
  r.out.o = rounded(types.o, std::move(r.out.o));
  r.out.final_state = rounded(types.final_state, std::move(r.out.final_state));
  return r;
}

/// \brief The twin's outputs alone (twin_forward without its stages), for judging outputs.
inline Output<float> twin_output(KernelRule rule, Policy p, DType t, const Inputs<float> &stored,
                                 const Options &opts, const OutputTypes &types) {
  const emulation::Scope scope(roundings_or_throw(p, t));
  Output<float> r = chunk_forward(rule, stored, opts);
  r.o = rounded(types.o, std::move(r.o));
  r.final_state = rounded(types.final_state, std::move(r.final_state));
  return r;
}

/// \brief The twin's backward: the reference's analytic backward at the kernel's chunk size
/// under policy p, every gradient rounded to its type.
inline Grads<float> twin_backward(KernelRule rule, Policy p, DType t, const Inputs<float> &stored,
                                  const Cotangents<float> &ct_stored, const Options &opts,
                                  const OutputTypes &types) {
  const emulation::Scope scope(roundings_or_throw(p, t));
  Grads<float> g = chunk_backward(rule, stored, ct_stored, opts);
  g.dq = rounded(types.dq, std::move(g.dq));
  g.dk = rounded(types.dk, std::move(g.dk));
  g.dv = rounded(types.dv, std::move(g.dv));
  g.dg = rounded(types.dg, std::move(g.dg));
  g.dbeta = rounded(types.dbeta, std::move(g.dbeta));
  g.da = rounded(types.da, std::move(g.da));
  g.db = rounded(types.db, std::move(g.db));
  g.dh0 = rounded(types.dh0, std::move(g.dh0));
  return g;
}

} // namespace ruleproof::gpu
