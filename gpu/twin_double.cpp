// ruleproof: the reference's chunkwise forms of the six kernel rules (gpu/twin.hpp) in double,
// compiled here once: the truth of the kernel checks.
#include "twin.hpp"

namespace ruleproof::gpu {

template StagedForward<double> chunk_forward_staged(KernelRule, const Inputs<double> &,
                                                    const Options &);
template Output<double> chunk_forward(KernelRule, const Inputs<double> &, const Options &);
template Grads<double> chunk_backward(KernelRule, const Inputs<double> &,
                                      const Cotangents<double> &, const Options &);

} // namespace ruleproof::gpu
