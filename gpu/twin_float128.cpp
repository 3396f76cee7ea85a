// ruleproof: the reference's chunkwise forms of the six kernel rules (gpu/twin.hpp) in float128,
// compiled here once: the truth of the kernel checks (declared in gpu/twin_float128.hpp; the
// rules' forms from the truth library).
#include "twin_float128.hpp"

#include "reference/truth/float128.hpp"

#include "detail/twin_impl.hpp"

namespace ruleproof::gpu {

template StagedForward<float128> chunk_forward_staged(KernelRule, const Inputs<float128> &,
                                                      const Options &);
template Output<float128> chunk_forward(KernelRule, const Inputs<float128> &, const Options &);
template Grads<float128> chunk_backward(KernelRule, const Inputs<float128> &,
                                        const Cotangents<float128> &, const Options &);

} // namespace ruleproof::gpu
