// delta_benchmark: how long the chunkwise Gated DeltaNet truth takes at one head, forward
// and forward + backward (seed 003's stages, kda/chunk.hpp), in double and float128.
//
//   build:  cmake --build build-delta --target delta_benchmark
//   run:    build-delta/bench/delta_benchmark --T 4096 --K 128 --V 128 --C 64
//
// "fwd" is kda::chunk_forward_head (every stage kept); "fwd+bwd" adds
// kda::chunk_backward_head, which recomputes the forward it needs (seed 003 backward steps
// 1-2), as the kernels do. One thread.
#include <chrono> // steady_clock
#include <cmath>  // std::exp, std::log1p, std::sqrt
#include <cstdio> // std::printf
#include <random> // std::mt19937_64, uniform_real_distribution
#include <string> // std::string
#include <vector> // std::vector

#include <CLI/CLI.hpp> // CLI::App

#include "reference/core/float128.hpp"                     // float128
#include "reference/gated_delta_rule/gated_delta_rule.hpp" // kda::chunk_forward_head, ...

using namespace ruleproof;

namespace {

/// One Gated DeltaNet head as kda sees it: q, v uniform in [-1, 1]; k rows uniform then
/// normalised to ||k|| = 1; g = log-sigmoid(z) / 16, z uniform in [-4, 4], repeated over the
/// keys; beta = sigmoid(z); no initial state.
template <Scalar S> Head<S> draw_head(std::size_t T, std::size_t K, std::size_t V) {
  std::mt19937_64 rng(2024);
  std::uniform_real_distribution<double> unit(-1.0, 1.0), logit(-4.0, 4.0);
  Head<S> x;
  x.q = Mat<S>(T, K);
  x.k = Mat<S>(T, K);
  x.v = Mat<S>(T, V);
  x.g = Mat<S>(T, K);
  x.beta = Vec<S>(T);
  x.h0 = Mat<S>::Zero(K, V);
  for (std::size_t t = 0; t < T; ++t) {
    double norm2 = 0;
    std::vector<double> k(K);
    for (std::size_t i = 0; i < K; ++i) {
      x.q(t, i) = from_double<S>(unit(rng));
      k[i] = unit(rng);
      norm2 += k[i] * k[i];
    }
    for (std::size_t i = 0; i < K; ++i)
      x.k(t, i) = from_double<S>(k[i] / std::sqrt(norm2));
    for (std::size_t j = 0; j < V; ++j)
      x.v(t, j) = from_double<S>(unit(rng));
    const double g = -std::log1p(std::exp(-logit(rng))) / 16.0;
    for (std::size_t i = 0; i < K; ++i)
      x.g(t, i) = from_double<S>(g);
    x.beta(t) = from_double<S>(1.0 / (1.0 + std::exp(-logit(rng))));
  }
  return x;
}

template <class F> double milliseconds(F f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

template <Scalar S> void run(std::size_t T, std::size_t K, std::size_t V, std::size_t C) {
  using std::sqrt;
  const Head<S> x = draw_head<S>(T, K, V);
  const S scale = S(1) / sqrt(S(static_cast<int>(K)));
  kda::ChunkForward<S> fwd;
  const double ms_fwd = milliseconds([&] { fwd = kda::chunk_forward_head(x, scale, C); });
  const HeadCotangent<S> ct{Mat<S>::Ones(T, V), Mat<S>::Ones(K, V)};
  HeadGrads<S> d;
  const double ms_bwd = milliseconds([&] { d = kda::chunk_backward_head(x, ct, scale, C); });
  std::printf("%-9s T=%zu K=%zu V=%zu C=%zu  fwd %10.1f ms  fwd+bwd %10.1f ms  (o[0,0] %.6g, "
              "dq[0,0] %.6g)\n",
              scalar_traits<S>::name().c_str(), T, K, V, C, ms_fwd, ms_fwd + ms_bwd,
              to_double(fwd.out.o(T - 1, 0)), to_double(d.dq(0, 0)));
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"delta_benchmark: the chunkwise Gated DeltaNet truth at one head"};
  std::size_t T = 4096, K = 128, V = 128, C = 64;
  bool skip_double = false;
  app.add_option("--T", T, "sequence length");
  app.add_option("--K", K, "key dimension");
  app.add_option("--V", V, "value dimension");
  app.add_option("--C", C, "chunk size");
  app.add_flag("--float128-only", skip_double, "skip the double row");
  CLI11_PARSE(app, argc, argv);
  if (!skip_double)
    run<double>(T, K, V, C);
  run<float128>(T, K, V, C);
  return 0;
}
