// ruleproof: the twin's chunkwise forms in float128, the truth of the checks (gpu/twin.hpp;
// compiled in gpu/twin_float128.cpp), and the stored inputs widened to float128 for it.
#pragma once

#include "reference/core/float128.hpp"
#include "twin.hpp"

namespace ruleproof::gpu {

extern template StagedForward<float128> chunk_forward_staged(KernelRule, const Inputs<float128> &,
                                                             const Options &);
extern template Output<float128> chunk_forward(KernelRule, const Inputs<float128> &,
                                               const Options &);
extern template Grads<float128> chunk_backward(KernelRule, const Inputs<float128> &,
                                               const Cotangents<float128> &, const Options &);

/// \brief The stored inputs widened to float128 for the truth (exactly: every float is one).
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

} // namespace ruleproof::gpu
