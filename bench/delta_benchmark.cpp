// delta_benchmark: how long the chunkwise truth of the delta-rule family takes at one head,
// forward and forward + backward (seed 003's stages, kda/chunk.hpp), in double and float128:
// Gated DeltaNet (gated_delta_rule::chunk, ::chunk_backward; a scalar gate) and KDA
// (kda::chunk, ::chunk_backward; a gate per key).
//
//   build:  cmake --build build-speed --target delta_benchmark
//   run:    taskset -c 0 build-speed/bench/delta_benchmark --T 4096 --K 128 --V 128 --C 64
//
// Each row is one call of the rule's chunk form on [1, T, 1, K] inputs, then one call of its
// chunk_backward (which recomputes the forward stages it needs, as the kernels do), on one
// thread. "ms" columns are wall clock; "cpu ms" is the thread's CPU time (on a shared machine
// the wall clock also counts others' work).
//
// Figures (T = 4096, K = V = 128, C = 64, one head, ms fwd+bwd, thread CPU time; build machine,
// 2 cores shared with other work, pinned to one core; the wall clock was up to 3.5x the CPU time
// under load, about 1.1x on a quiet machine):
//   version                                                   Gated DeltaNet        KDA
//   plain Eigen float128 (206e573)                                    80 316     77 571
//   products.hpp dot products, exps once a chunk, GDN decay per row    6 517      9 128
//   double, 206e573 / now                                         755 / 454  654 / 384
#include <algorithm> // std::min
#include <chrono>    // steady_clock
#include <cmath>     // std::exp, std::log1p, std::sqrt
#include <cstdio>    // std::printf
#include <ctime>     // clock_gettime
#include <random>    // std::mt19937_64, uniform_real_distribution
#include <string>    // std::string
#include <vector>    // std::vector

#include <CLI/CLI.hpp> // CLI::App

#include "reference/core/float128.hpp"                     // float128
#include "reference/gated_delta_rule/gated_delta_rule.hpp" // gated_delta_rule::chunk, kda::chunk

using namespace ruleproof;

namespace {

struct BenchShape {
  std::size_t T, K, V, C;
};

/// One head [1, T, 1, .]: q, v uniform in [-1, 1]; k rows uniform then normalised to
/// ||k|| = 1; g = log-sigmoid(z) / 16, z uniform in [-4, 4], one per step (Gated DeltaNet,
/// [1, T, 1]) or one per step and key (KDA, [1, T, 1, K]); beta = sigmoid(z); no initial
/// state.
template <Scalar S> Inputs<S> draw_inputs(const BenchShape &s, bool per_key_gate) {
  std::mt19937_64 rng(2024);
  std::uniform_real_distribution<double> unit(-1.0, 1.0), logit(-4.0, 4.0);
  const auto log_gate = [&] { return from_double<S>(-std::log1p(std::exp(-logit(rng))) / 16.0); };
  Inputs<S> in;
  in.q = Tensor<S>({1, s.T, 1, s.K});
  in.k = Tensor<S>({1, s.T, 1, s.K});
  in.v = Tensor<S>({1, s.T, 1, s.V});
  in.g = per_key_gate ? Tensor<S>({1, s.T, 1, s.K}) : Tensor<S>({1, s.T, 1});
  in.beta = Tensor<S>({1, s.T, 1});
  for (std::size_t t = 0; t < s.T; ++t) {
    double norm2 = 0;
    std::vector<double> k(s.K);
    for (std::size_t i = 0; i < s.K; ++i) {
      in.q[t * s.K + i] = from_double<S>(unit(rng));
      k[i] = unit(rng);
      norm2 += k[i] * k[i];
    }
    for (std::size_t i = 0; i < s.K; ++i)
      in.k[t * s.K + i] = from_double<S>(k[i] / std::sqrt(norm2));
    for (std::size_t j = 0; j < s.V; ++j)
      in.v[t * s.V + j] = from_double<S>(unit(rng));
    if (per_key_gate)
      for (std::size_t i = 0; i < s.K; ++i)
        in.g[t * s.K + i] = log_gate();
    else
      in.g[t] = log_gate();
    in.beta[t] = from_double<S>(1.0 / (1.0 + std::exp(-logit(rng))));
  }
  return in;
}

/// dO = 1, dS_T = 1.
template <Scalar S> Cotangents<S> ones(const BenchShape &s) {
  Cotangents<S> ct{Tensor<S>({1, s.T, 1, s.V}), Tensor<S>({1, 1, s.K, s.V})};
  for (std::size_t i = 0; i < ct.d_o.size(); ++i)
    ct.d_o[i] = S(1);
  for (std::size_t i = 0; i < ct.d_ht.size(); ++i)
    ct.d_ht[i] = S(1);
  return ct;
}

double wall_ms() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double, std::milli>(clock::now().time_since_epoch()).count();
}

/// CPU time of this thread, in ms.
double cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return 1e3 * double(ts.tv_sec) + 1e-6 * double(ts.tv_nsec);
}

struct Timing {
  double fwd = 1e300, fwd_bwd = 1e300, cpu_fwd_bwd = 1e300; ///< best over the repeats
  double o_last = 0, dq_first = 0;                          ///< o[T-1, 0], dq[0, 0]
};

/// The rule's chunk form, then its chunk_backward, on one thread.
template <Scalar S, class Forward, class Backward>
Timing time_rule(const BenchShape &s, bool per_key_gate, int repeats, Forward forward,
                 Backward backward) {
  const Inputs<S> in = draw_inputs<S>(s, per_key_gate);
  const Cotangents<S> ct = ones<S>(s);
  Options opts;
  opts.chunk_size = s.C;
  Timing best;
  for (int r = 0; r < repeats; ++r) {
    const double c0 = cpu_ms(), t0 = wall_ms();
    const Output<S> out = forward(in, opts);
    const double t1 = wall_ms();
    const Grads<S> d = backward(in, ct, opts);
    const double t2 = wall_ms(), c2 = cpu_ms();
    best.fwd = std::min(best.fwd, t1 - t0);
    best.fwd_bwd = std::min(best.fwd_bwd, t2 - t0);
    best.cpu_fwd_bwd = std::min(best.cpu_fwd_bwd, c2 - c0);
    best.o_last = to_double(out.o[(s.T - 1) * s.V]);
    best.dq_first = to_double(d.dq[0]);
  }
  return best;
}

template <Scalar S> Timing time_rule(const std::string &rule, const BenchShape &s, int repeats) {
  if (rule == "kda")
    return time_rule<S>(
        s, true, repeats, [](const Inputs<S> &in, const Options &o) { return kda::chunk(in, o); },
        [](const Inputs<S> &in, const Cotangents<S> &ct, const Options &o) {
          return kda::chunk_backward(in, ct, o);
        });
  return time_rule<S>(
      s, false, repeats,
      [](const Inputs<S> &in, const Options &o) { return gated_delta_rule::chunk(in, o); },
      [](const Inputs<S> &in, const Cotangents<S> &ct, const Options &o) {
        return gated_delta_rule::chunk_backward(in, ct, o);
      });
}

template <Scalar S> void run(const std::string &rule, const BenchShape &s, int repeats) {
  const Timing t = time_rule<S>(rule, s, repeats);
  std::printf("%-16s %-9s %5zu %4zu %4zu %3zu %10.1f %12.1f %14.1f   %.6g %.6g\n", rule.c_str(),
              scalar_traits<S>::name().c_str(), s.T, s.K, s.V, s.C, t.fwd, t.fwd_bwd, t.cpu_fwd_bwd,
              t.o_last, t.dq_first);
  std::fflush(stdout);
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"delta_benchmark: the chunkwise delta-rule family truth at one head"};
  BenchShape s{4096, 128, 128, 64};
  int repeats = 1;
  std::vector<std::string> rules{"gated_delta_rule", "kda"}, scalars{"double", "float128"};
  bool float128_only = false;
  app.add_option("--T", s.T, "sequence length")->capture_default_str();
  app.add_option("--K", s.K, "key dimension")->capture_default_str();
  app.add_option("--V", s.V, "value dimension")->capture_default_str();
  app.add_option("--C", s.C, "chunk size")->capture_default_str();
  app.add_option("--repeats", repeats, "runs per row; the best is shown")->capture_default_str();
  app.add_option("--rules", rules, "gated_delta_rule, kda")->delimiter(',')->capture_default_str();
  app.add_option("--scalars", scalars, "double, float128")->delimiter(',')->capture_default_str();
  app.add_flag("--float128-only", float128_only, "skip the double rows");
  CLI11_PARSE(app, argc, argv);

  std::printf("%-16s %-9s %5s %4s %4s %3s %10s %12s %14s   %s\n", "rule", "scalar", "T", "K", "V",
              "C", "ms fwd", "ms fwd+bwd", "cpu ms fwd+bwd", "o[T-1,0] dq[0,0]");
  for (const std::string &rule : rules)
    for (const std::string &name : scalars) {
      if (name == "double" && !float128_only)
        run<double>(rule, s, repeats);
      else if (name == "float128")
        run<float128>(rule, s, repeats);
      else if (name != "double")
        std::printf("# unknown scalar %s\n", name.c_str());
    }
  return 0;
}
