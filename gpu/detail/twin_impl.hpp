// ruleproof: the definitions of the twin's chunkwise forms (gpu/twin.hpp) over the rules'
// reference headers; included only by gpu/twin_float.cpp, twin_double.cpp and twin_float128.cpp,
// which compile them once for each scalar.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "../twin.hpp"
#include "reference/core/heads.hpp"
#include "reference/dplr/dplr.hpp"
#include "reference/gated_delta_rule/gated_delta_rule.hpp"
#include "reference/gated_oja/gated_oja.hpp"
#include "reference/gla/gla.hpp"
#include "reference/kda/kda.hpp"
#include "reference/simple_gla/simple_gla.hpp"

namespace ruleproof::gpu {

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

inline std::string not_a_kernel_rule(RuleId rule) {
  return std::string(name_of(rule)) + " is not a rule the kernels compute";
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
  default: break;
  }
  throw std::invalid_argument(not_a_kernel_rule(rule));
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
        default: break; // refused by signature_of above
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
  default: break;
  }
  throw std::invalid_argument(twin_detail::not_a_kernel_rule(rule));
}

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
  default: break;
  }
  throw std::invalid_argument(twin_detail::not_a_kernel_rule(rule));
}

} // namespace ruleproof::gpu
