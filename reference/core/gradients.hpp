// ruleproof: the gradient truth, two independent ways: central finite differences with a
// Richardson error estimate, and exact forward-mode derivatives with dual numbers.
#pragma once

#include <array>
#include <functional>
#include <string>

#include "dual.hpp"
#include "inputs.hpp"

namespace ruleproof {

/// \brief One differentiable input: its name, where it sits in Inputs and in Grads.
template <class S> struct GradField {
  const char *name;
  Tensor<S> Inputs<S>::*input;
  Tensor<S> Grads<S>::*grad;
};

template <class S> std::array<GradField<S>, 8> grad_fields() {
  return {{{"q", &Inputs<S>::q, &Grads<S>::dq},
           {"k", &Inputs<S>::k, &Grads<S>::dk},
           {"v", &Inputs<S>::v, &Grads<S>::dv},
           {"g", &Inputs<S>::g, &Grads<S>::dg},
           {"beta", &Inputs<S>::beta, &Grads<S>::dbeta},
           {"initial_state", &Inputs<S>::h0, &Grads<S>::dh0},
           {"a", &Inputs<S>::a, &Grads<S>::da},
           {"b", &Inputs<S>::b, &Grads<S>::db}}};
}

/// Converts every tensor of a call to another scalar type.
template <class To, class From, class Convert>
Inputs<To> convert_inputs(const Inputs<From> &in, Convert convert) {
  const auto c = [&](const Tensor<From> &x) { return x.template map<To>(convert); };
  return {c(in.q), c(in.k), c(in.v), c(in.g), c(in.beta), c(in.h0), c(in.a), c(in.b)};
}

/// \brief The loss every backward pass differentiates: \f$ \langle dO, O\rangle +
/// \langle dS_T, S_T\rangle \f$.
template <class S, class C> S loss(const Output<S> &out, const Cotangents<C> &ct) {
  S total(0);
  for (std::size_t i = 0; i < out.o.size(); ++i)
    total += out.o[i] * ct.d_o[i];
  for (std::size_t i = 0; i < ct.d_ht.size(); ++i)
    total += out.final_state[i] * ct.d_ht[i];
  return total;
}

/// \brief Finite-difference gradients and, per element, an estimate of their error.
template <class S> struct FiniteDifference {
  Grads<S> grads;
  Grads<S> error; ///< |D(h) - D(2h)| / 3 (Richardson) plus the rounding eps |L| / h
};

/// \brief Central differences \f$ D(h) = (L(x + h) - L(x - h)) / 2h \f$ for every input
/// element, with \f$ h = \varepsilon^{1/3} \max(1, |x|) \f$ (the step that balances the
/// O(h^2) truncation against the O(eps/h) rounding). `forward(inputs)` returns Output<S>.
template <Scalar S, class Forward>
FiniteDifference<S> finite_difference_grads(const Inputs<S> &in, const Cotangents<S> &ct,
                                            Forward forward) {
  using std::abs;
  using std::cbrt;
  const S eps = scalar_traits<S>::epsilon();
  const S step0 = cbrt(eps);
  const S base = abs(loss(forward(in), ct));
  FiniteDifference<S> fd;
  Inputs<S> x = in;
  for (const auto &f : grad_fields<S>()) {
    Tensor<S> &xt = x.*f.input;
    if (xt.empty())
      continue;
    Tensor<S> d(xt.shape()), err(xt.shape());
    for (std::size_t i = 0; i < xt.size(); ++i) {
      const S x0 = xt[i];
      const S h = step0 * (abs(x0) > S(1) ? abs(x0) : S(1));
      const auto central = [&](const S &step) {
        xt[i] = x0 + step;
        const S up = loss(forward(x), ct);
        xt[i] = x0 - step;
        const S down = loss(forward(x), ct);
        xt[i] = x0;
        return S((up - down) / (step + step));
      };
      const S d1 = central(h), d2 = central(S(2) * h);
      d[i] = d1;
      err[i] = abs(d1 - d2) / S(3) + eps * base / h;
    }
    fd.grads.*f.grad = std::move(d);
    fd.error.*f.grad = std::move(err);
  }
  return fd;
}

/// \brief Exact gradients: for every input element, evaluate `forward` on dual numbers
/// seeded with derivative 1 at that element; the loss's dual part is that derivative.
/// `forward(Inputs<Dual<S>>)` returns Output<Dual<S>>. Costs one forward pass an element.
template <Scalar S, class Forward>
Grads<S> dual_grads(const Inputs<S> &in, const Cotangents<S> &ct, Forward forward) {
  using D = Dual<S>;
  Inputs<D> x = convert_inputs<D>(in, [](const S &e) { return D(e); });
  Grads<S> grads;
  auto fields_d = grad_fields<D>();
  auto fields_s = grad_fields<S>();
  for (std::size_t f = 0; f < fields_d.size(); ++f) {
    Tensor<D> &xt = x.*fields_d[f].input;
    if (xt.empty())
      continue;
    Tensor<S> d(xt.shape());
    for (std::size_t i = 0; i < xt.size(); ++i) {
      xt[i].b = S(1);
      d[i] = loss(forward(x), ct).b;
      xt[i].b = S(0);
    }
    grads.*fields_s[f].grad = std::move(d);
  }
  return grads;
}

} // namespace ruleproof
