// sympow gradients in float128: the attention form's analytic backward (dq, dk, dv, dg, dbeta)
// equals the exact dual-number derivative, which equals central finite differences.
// Bounds: analytic vs dual, 2 gamma_n' M' (reference/sympow/bounds.hpp); finite differences vs
// dual, the Richardson estimate finite_difference_grads returns, plus the rounding of the two
// loss evaluations 2 gamma_n Lmag / h (h = eps^(1/3) max(1, |x|), as it chooses), plus gamma_n' M'.
#include "reference/core/float128.hpp"
#include "sympow_properties.hpp"

using namespace ruleproof;
using namespace ruleproof::sympow;
using namespace ruleproof::sympow::test;
using S = float128;

namespace {

void gradients_agree(Variant v) {
  const std::uint64_t seed = rc::detail::configuration().testParams.seed;
  INFO("RapidCheck seed " << seed << ": replay with RC_PARAMS=\"seed=" << seed << "\"");
  rc::prop(std::string("analytic_equals_dual_equals_finite_differences/") + name_of(v), [v, seed] {
    RC_LOG() << "seed=" << seed << "\n";
    const Case c = draw_case(v, 5, false); // T <= 5, one head, no initial state
    const auto ps = powers();
    const auto [p, normalize] =
        ps[static_cast<std::size_t>(draw(0, static_cast<int>(ps.size()) - 1))];
    RC_LOG() << c.show() << "\np=" << p << " normalize=" << normalize << "\n";
    SympowOptions o = options_of<S>(c, p, normalize);
    o.output_final_state = false;
    const Inputs<S> in = inputs_of<S>(c, o);
    Cotangents<S> ct;
    ct.d_o = tensor_of<S>(in.v.shape(), reals(in.v.size(), -1, 1));
    const auto fwd = [&o](const auto &x) { return attention(x, o); };
    const Grads<S> analytic = attention_backward(in, ct, o);
    const Grads<S> dual = dual_grads(in, ct, fwd);
    const FiniteDifference<S> fd = finite_difference_grads(in, ct, fwd);
    const BackwardBound<S> bb = backward_bound(in, ct, o);
    const S eps = scalar_traits<S>::epsilon();
    const S g_fwd = gamma_n<S>(bb.n_forward);
    RC_LOG() << "n'=" << bb.n << " n=" << bb.n_forward << "\n";
    for (const auto &f : grad_fields<S>()) {
      const Tensor<S> &x = in.*f.input;
      if (x.empty() || f.grad == &Grads<S>::dh0)
        continue;
      const Tensor<S> &bound = bb.grads.*f.grad;
      RC_ASSERT(within(std::string("analytic vs dual, d") + f.name, analytic.*f.grad, dual.*f.grad,
                       bound));
      Tensor<S> fd_bound(x.shape());
      for (std::size_t i = 0; i < x.size(); ++i) {
        using std::abs;
        using std::cbrt;
        const S h = cbrt(eps) * (abs(x[i]) > S(1) ? abs(x[i]) : S(1));
        fd_bound[i] = (fd.error.*f.grad)[i] + S(2) * g_fwd * bb.loss_magnitude / h + bound[i] / 2;
      }
      RC_ASSERT(within(std::string("finite differences vs dual, d") + f.name, fd.grads.*f.grad,
                       dual.*f.grad, fd_bound));
    }
  });
}

} // namespace

TEST_CASE("gradients_analytic_dual_finite_differences_agree_plain/float128", "[sympow][float128]") {
  gradients_agree(Variant::plain);
}
TEST_CASE("gradients_analytic_dual_finite_differences_agree_fixed_rotary/float128",
          "[sympow][float128]") {
  gradients_agree(Variant::rotary);
}
TEST_CASE("gradients_analytic_dual_finite_differences_agree_gated/float128", "[sympow][float128]") {
  gradients_agree(Variant::gated);
}
TEST_CASE("gradients_analytic_dual_finite_differences_agree_data_dependent_rotation/float128",
          "[sympow][float128]") {
  gradients_agree(Variant::rates);
}
TEST_CASE("gradients_analytic_dual_finite_differences_agree_gated_and_rotated/float128",
          "[sympow][float128]") {
  gradients_agree(Variant::conformal);
}
