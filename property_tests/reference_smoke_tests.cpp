// A fixed-input check that every rule's forms build and agree in double; the random
// properties live beside this file.
#include <catch2/catch.hpp>

#include "reference/core/compare.hpp"
#include "reference/rules.hpp"

using namespace ruleproof;

TEST_CASE("every_rule_has_three_forms_that_agree_on_a_fixed_input") {
  rules::for_each_rule([](auto rule) {
    using Rule = decltype(rule);
    const std::size_t B = 1, T = 5, H = 1, K = 2, V = 3;
    Inputs<double> in;
    in.q = Tensor<double>({B, T, H, K}, 0.5);
    in.k = Tensor<double>({B, T, H, K}, 0.25);
    in.v = Tensor<double>({B, T, H, V}, 1.0);
    const Signature sig = Rule::signature();
    if (sig.gate == GateKind::scalar)
      in.g = Tensor<double>({B, T, H}, -0.5);
    if (sig.gate == GateKind::key)
      in.g = Tensor<double>({B, T, H, K}, -0.5);
    Options opts;
    opts.chunk_size = 2;
    const auto r = Rule::recurrent(in, opts), c = Rule::chunk(in, opts);
    const auto bound = [](std::size_t) { return 1e-14; };
    INFO(Rule::name());
    CHECK(compare(c.o, r.o, bound).holds());
  });
}
