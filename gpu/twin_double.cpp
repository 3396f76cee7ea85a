// ruleproof: the reference's chunkwise forms of the six kernel rules (gpu/twin.hpp) in double,
// compiled here once: the truth of the kernel checks (the rules' forms from the truth library).
#include "reference/truth/forms.hpp"

#include "detail/twin_impl.hpp"

namespace ruleproof::gpu {

template StagedForward<double> chunk_forward_staged(KernelRule, const Inputs<double> &,
                                                    const Options &);
template Output<double> chunk_forward(KernelRule, const Inputs<double> &, const Options &);
template Grads<double> chunk_backward(KernelRule, const Inputs<double> &,
                                      const Cotangents<double> &, const Options &);

} // namespace ruleproof::gpu
