// sympow in double: the three forms agree (bounds from double's precision), and bad input is
// refused with an InputError naming the tensor and the problem, before anything is computed.
#include "sympow_properties.hpp"

using namespace ruleproof;
using namespace ruleproof::sympow::test;
using S = double;

TEST_CASE("attention_equals_recurrent_equals_chunked_plain/double", "[sympow][double]") {
  forms_agree<S>(Variant::plain);
}
TEST_CASE("attention_equals_recurrent_equals_chunked_fixed_rotary/double", "[sympow][double]") {
  forms_agree<S>(Variant::rotary);
}
TEST_CASE("attention_equals_recurrent_equals_chunked_gated/double", "[sympow][double]") {
  forms_agree<S>(Variant::gated);
}
TEST_CASE("attention_equals_recurrent_equals_chunked_data_dependent_rotation/double",
          "[sympow][double]") {
  forms_agree<S>(Variant::rates);
}
TEST_CASE("attention_equals_recurrent_equals_chunked_gated_and_rotated/double",
          "[sympow][double]") {
  forms_agree<S>(Variant::conformal);
}

namespace {

Inputs<S> small_call(std::size_t K = 4, std::size_t V = 2, std::size_t T = 3) {
  Inputs<S> in;
  in.q = Tensor<S>({1, T, 1, K}, 0.5);
  in.k = Tensor<S>({1, T, 1, K}, 0.25);
  in.v = Tensor<S>({1, T, 1, V}, 1.0);
  return in;
}

/// Runs f, expects an InputError naming `input` whose message contains `text`.
template <class F> void refuses(F f, const std::string &input, const std::string &text) {
  try {
    f();
    FAIL("no InputError for " << input);
  } catch (const InputError &e) {
    INFO(e.what());
    CHECK(e.input() == input);
    CHECK(std::string(e.what()).find(text) != std::string::npos);
  }
}

} // namespace

TEST_CASE("bad_input_is_refused_naming_the_tensor", "[sympow][double][bad_input]") {
  using namespace ruleproof::sympow;
  SympowOptions o;
  o.p = 2;
  for (sympow::Form f : {sympow::Form::attention, sympow::Form::recurrent, sympow::Form::chunk}) {
    INFO(name_of(f));
    const auto run = [&](const Inputs<S> &in, const SympowOptions &opts) {
      return [&, in, opts] { forward(f, in, opts); };
    };
    SympowOptions odd = o;
    odd.p = 3;
    refuses(run(small_call(), odd), "p", "needs an even p, got p = 3");
    odd.normalize = false; // odd p is fine without normalisation
    CHECK_NOTHROW(forward(f, small_call(), odd));
    Inputs<S> in = small_call();
    in.k = Tensor<S>({1, 3, 1, 5});
    refuses(run(in, o), "k", "shape [1, 3, 1, 5], expected [1, 3, 1, 4]");
    in = small_call();
    in.v = Tensor<S>({1, 2, 1, 2});
    refuses(run(in, o), "v", "expected [1, 3, 1, 2]");
    in = small_call();
    in.q[5] = std::numeric_limits<S>::quiet_NaN();
    refuses(run(in, o), "q", "element 5 is not finite");
    in = small_call();
    in.v[1] = std::numeric_limits<S>::infinity();
    refuses(run(in, o), "v", "element 1 is not finite");
    in = small_call();
    in.g = Tensor<S>({1, 3, 1}, -0.5);
    in.g[2] = 0.25;
    refuses(run(in, o), "g", "element 2 is a positive log-gate");
    in.g = Tensor<S>({1, 3, 2}, -0.5);
    refuses(run(in, o), "g", "expected [1, 3, 1]");
    in = small_call();
    in.beta = Tensor<S>({1, 3, 1}, 1.0);
    refuses(run(in, o), "beta", "need theta");
    SympowOptions rot = o;
    rot.rotary_base = 100;
    refuses(run(small_call(3), rot), "q", "K = 3 is odd");
    rot.theta = {1.0};
    refuses(run(small_call(), rot), "theta", "1 rates, expected K/2 = 2");
    rot.theta.clear(); // the initial angles mu_0: [N, H, K/2], finite, on a rotating call
    const auto from_angle = [&](const SympowOptions &opts, const Tensor<S> &mu0) {
      return [&, opts, mu0] { forward(f, small_call(), opts, mu0); };
    };
    refuses(from_angle(o, Tensor<S>({1, 1, 2})), "initial_angle", "needs a rotation");
    refuses(from_angle(rot, Tensor<S>({1, 1, 1})), "initial_angle", "expected [1, 1, 2]");
    Tensor<S> mu0({1, 1, 2});
    mu0[1] = std::numeric_limits<S>::infinity();
    refuses(from_angle(rot, mu0), "initial_angle", "element 1 is not finite");
    in = small_call();
    in.h0 = Tensor<S>({1, 1, 9, 3});
    refuses(run(in, o), "initial_state", "expected [1, 1, 10, 3]");
    SympowOptions c0 = o;
    c0.chunk_size = 0;
    refuses(run(small_call(), c0), "chunk_size", "at least 1");
  }
}

TEST_CASE("a_state_too_large_is_refused_with_its_cost_and_the_attention_form_runs_without_it",
          "[sympow][double][memory]") {
  using namespace ruleproof::sympow;
  SympowOptions o;
  o.p = 4;
  o.max_bytes = std::size_t{100} << 20; // 100 MiB
  const Inputs<S> in = small_call(64, 64, 3);
  // d = 64, p = 4: D = C(67, 4) = 766,480; D x (V+1) x 8 bytes = 398,569,600 bytes.
  CHECK(embedding_dim(64, 4) == 766480);
  refuses([&] { recurrent(in, o); }, "p", "398,569,600 bytes");
  refuses([&] { chunk(in, o); }, "p", "D = C(d+p-1, p) = C(67, 4) = 766480");
  CHECK_NOTHROW(attention(in, o)); // needs only (q^T k)^p
  o.output_final_state = true;
  refuses([&] { attention(in, o); }, "p", "the final state keeps a state of D x (V+1)");
  o.output_final_state = false;
  o.max_bytes = default_max_bytes;
  o.p = 6; // D = C(69, 6) = 119,877,472: 62 GB in double
  refuses([&] { recurrent(in, o); }, "p", "62,336,285,440 bytes");
  CHECK_NOTHROW(attention(in, o));
  refuses([&] { phi(Vec<S>(Vec<S>::Ones(64)), 6); }, "p", "the basis of phi^6 on R^64");
  refuses([&] { tensor_power(Vec<S>(Vec<S>::Ones(64)), 6); }, "p", "d^p entries");
  refuses([&] { sym_power(Mat<S>(Mat<S>::Identity(64, 64)), 4); }, "P", "Sym^4(P)");
}

// The case RapidCheck found: at t = 0, q.k = -0.0031 against |q|.|k| = 1.72, so (q.k)^6 is
// 9e-16 while phi(q).phi(k) sums terms of size 26: in double the normalised denominator rounds
// to 0 and the recurrent form returns 0/0. The bound must call that row undecided, and decide
// the rest.
TEST_CASE("a_normalised_row_whose_denominator_cancels_is_undecided_and_the_rest_is_checked",
          "[sympow][double]") {
  using namespace ruleproof::sympow;
  Inputs<S> in = small_call(3, 2, 3);
  const double q0[3] = {0.259518, -0.904339, -0.889355}, k0[3] = {-0.387352, -0.948795, 0.85524};
  for (std::size_t c = 0; c < 3; ++c) {
    in.q[c] = q0[c];
    in.k[c] = k0[c];
  }
  in.g = Tensor<S>({1, 3, 1}, -1.0);
  SympowOptions o;
  o.p = 6;
  o.chunk_size = 1;
  const ForwardBound<S> fb = forward_bound(in, o);
  for (std::size_t c = 0; c < 2; ++c) {
    CHECK(std::isinf(fb.o[c]));        // row 0: gamma_n kappa_0 >= 1
    CHECK(std::isfinite(fb.o[2 + c])); // rows 1, 2 are well conditioned
    CHECK(std::isfinite(fb.o[4 + c]));
  }
  const Output<S> a = attention(in, o), r = recurrent(in, o);
  const Discrepancy d = compare(a.o, r.o, [&](std::size_t i) { return fb.o[i]; });
  CHECK(d.undecided == 2);
  CHECK(d.holds());
  // A wrong value in a decided row still fails.
  Tensor<S> wrong = r.o;
  wrong[4] += 1e-6;
  CHECK_FALSE(compare(a.o, wrong, [&](std::size_t i) { return fb.o[i]; }).holds());
}
