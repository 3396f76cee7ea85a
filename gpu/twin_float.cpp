// ruleproof: the reference's chunkwise forms of the six kernel rules (gpu/twin.hpp) in float,
// compiled here once: the twin of the kernel checks.
#include "detail/twin_impl.hpp"

namespace ruleproof::gpu {

template StagedForward<float> chunk_forward_staged(KernelRule, const Inputs<float> &,
                                                   const Options &);
template Output<float> chunk_forward(KernelRule, const Inputs<float> &, const Options &);
template Grads<float> chunk_backward(KernelRule, const Inputs<float> &, const Cotangents<float> &,
                                     const Options &);

} // namespace ruleproof::gpu
