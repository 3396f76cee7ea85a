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
// The forms' definitions, and with them the rules' headers, are in gpu/detail/twin_impl.hpp,
// compiled once for each scalar in gpu/twin_float.cpp, twin_double.cpp and twin_float128.cpp;
// their float128 declarations and the widening to float128 are in gpu/twin_float128.hpp.
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
#include "reference/core/inputs.hpp"
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

/// \brief The reference's chunkwise forward of `rule` on every head of every sequence, with
/// its stages laid out as the kernels lay them out. Runs gla::chunk_forward_head (simple_gla:
/// on the gate repeated over the keys, simple_gla::as_key_gate), kda::chunk_forward_head
/// (gated_delta_rule: on kda::as_kda's head), dplr::chunk_forward_head (on dplr::as_core's head
/// of flash-linear-attention's parameterisation) or gated_oja::chunk_forward_head, as the
/// rules' own chunk forms do.
template <Scalar S>
StagedForward<S> chunk_forward_staged(KernelRule rule, const Inputs<S> &in, const Options &opts);

/// \brief The reference's chunkwise forward of `rule`, its outputs alone (no stages laid out).
template <Scalar S>
Output<S> chunk_forward(KernelRule rule, const Inputs<S> &in, const Options &opts);

/// \brief The reference's chunkwise analytic backward of `rule`.
template <Scalar S>
Grads<S> chunk_backward(KernelRule rule, const Inputs<S> &in, const Cotangents<S> &ct,
                        const Options &opts);

// The three forms are compiled once for each scalar the checks use, in gpu/twin_float.cpp (the
// twin), twin_double.cpp and twin_float128.cpp (the truth; declared in gpu/twin_float128.hpp),
// not in every file that includes this.
extern template StagedForward<float> chunk_forward_staged(KernelRule, const Inputs<float> &,
                                                          const Options &);
extern template StagedForward<double> chunk_forward_staged(KernelRule, const Inputs<double> &,
                                                           const Options &);
extern template Output<float> chunk_forward(KernelRule, const Inputs<float> &, const Options &);
extern template Output<double> chunk_forward(KernelRule, const Inputs<double> &, const Options &);
extern template Grads<float> chunk_backward(KernelRule, const Inputs<float> &,
                                            const Cotangents<float> &, const Options &);
extern template Grads<double> chunk_backward(KernelRule, const Inputs<double> &,
                                             const Cotangents<double> &, const Options &);

/// A truth read back as double for judging.
template <class S> Tensor<double> to_double_tensor(const Tensor<S> &t) {
  return t.template map<double>([](const S &x) { return to_double(x); });
}

/// Every gradient of a truth read back as double.
template <class S> Grads<double> to_double_grads(const Grads<S> &g) {
  return {to_double_tensor(g.dq), to_double_tensor(g.dk),    to_double_tensor(g.dv),
          to_double_tensor(g.dg), to_double_tensor(g.dbeta), to_double_tensor(g.dh0),
          to_double_tensor(g.da), to_double_tensor(g.db)};
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

/// The unit roundoff of the factors policy p rounds its products' operands to, for inputs of
/// type t; 0 where it rounds none (fp32) or cannot apply.
inline double operand_roundoff(Policy p, DType t) {
  const auto r = roundings(p, t);
  return r && r->operand_bits < 24 ? roundoff(r->operand_bits) : 0.0;
}

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
