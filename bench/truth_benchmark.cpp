// truth_benchmark: how long the chunkwise GLA truth takes, forward and forward + backward.
//
//   build:  cmake --build build-layer --target truth_benchmark
//   run:    build-layer/bench/truth_benchmark --T 4096 --K 128 --V 128 --C 64 --repeats 1
//
// Rows: one head (gla::chunk_head, then gla::chunk_backward_head, which recomputes what it
// needs of the forward) on one thread, in each scalar; then the whole multi-head call
// (gla::chunk + gla::chunk_backward on [1, T, H, K]) on 1 thread and on --threads threads,
// heads running in parallel. "ms fwd+bwd" is the forward call plus the backward call;
// "cpu ms" is process CPU time (on a shared machine the wall clock counts others' work too).
//
// Figures (T = 4096, K = V = 128, C = 64, one head, float128, ms fwd+bwd):
//   version                                  build machine (2 cores, shared)   H200 host
//   plain Eigen float128 (be66447)           70 700 wall, 47 317 CPU           33 589
//   integer-significand products, exps once  10 669 wall, 7 049 CPU             4 631
// Multi-head on the H100 host (16 cores), H = 8: float128 53 045 ms on 1 thread,
// 10 295 ms on 8; double 2 405 ms on 1, 531 ms on 8.
#include <algorithm> // std::min
#include <chrono>    // steady_clock
#include <cstdio>    // std::printf
#include <random>    // std::mt19937_64, uniform_real_distribution
#include <string>    // std::string
#include <vector>    // std::vector

#include <CLI/CLI.hpp> // CLI::App

#include "reference/core/float128.hpp" // float128, scalar_traits<float128>
#include "reference/gla/gla.hpp" // gla::chunk_head, chunk_backward_head, chunk, chunk_backward

using namespace ruleproof;

namespace {

struct Shape4 {
  std::size_t T, K, V, C, H;
};

/// Inputs of one call [1, T, H, K], drawn reproducibly: q, k, v uniform in [-1, 1], the
/// log-gate g = log-sigmoid(z) / 16 with z uniform in [-4, 4] (flash-linear-attention's
/// gate_logit_normalizer), so g in about [-0.25, -0.001].
template <Scalar S> Inputs<S> draw_inputs(const Shape4 &s, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(-1.0, 1.0), logit(-4.0, 4.0);
  const auto fill = [&](Shape shape, bool gate) {
    Tensor<S> x(std::move(shape));
    for (std::size_t i = 0; i < x.size(); ++i)
      x[i] = gate ? from_double<S>(-std::log1p(std::exp(-logit(rng))) / 16.0)
                  : from_double<S>(unit(rng));
    return x;
  };
  Inputs<S> in;
  in.q = fill({1, s.T, s.H, s.K}, false);
  in.k = fill({1, s.T, s.H, s.K}, false);
  in.v = fill({1, s.T, s.H, s.V}, false);
  in.g = fill({1, s.T, s.H, s.K}, true);
  return in;
}

template <Scalar S> Cotangents<S> draw_cotangents(const Shape4 &s, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  Cotangents<S> ct;
  ct.d_o = Tensor<S>({1, s.T, s.H, s.V});
  ct.d_ht = Tensor<S>({1, s.H, s.K, s.V});
  for (std::size_t i = 0; i < ct.d_o.size(); ++i)
    ct.d_o[i] = from_double<S>(unit(rng));
  for (std::size_t i = 0; i < ct.d_ht.size(); ++i)
    ct.d_ht[i] = from_double<S>(unit(rng));
  return ct;
}

double now_ms() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double, std::milli>(clock::now().time_since_epoch()).count();
}

/// CPU time of the whole process (all threads), in ms: on a shared machine the wall
/// clock also counts others' work; CPU / wall shows how many cores a call kept busy.
double cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return 1e3 * double(ts.tv_sec) + 1e-6 * double(ts.tv_nsec);
}

struct Timing {
  double fwd = 1e300, fwd_bwd = 1e300; ///< wall, best over the repeats
  double cpu_fwd_bwd = 1e300;          ///< CPU time of the forward + backward, best
};

/// One head on one thread: chunk_head, then chunk_backward_head.
template <Scalar S> Timing time_one_head(const Shape4 &s, int repeats) {
  Shape4 one = s;
  one.H = 1;
  const Inputs<S> in = draw_inputs<S>(one, 1);
  const Cotangents<S> ct = draw_cotangents<S>(one, 2);
  const Sequence seq{0, 0, s.T, 0};
  const Head<S> head = slice_head(in, seq, 0, gla::signature);
  const HeadCotangent<S> cot{detail::rows_of(ct.d_o, seq, 0),
                             detail::state_of(ct.d_ht, 0, 0, s.K, s.V)};
  const S scale = scale_of<S>(Options{}, s.K);
  Timing best;
  for (int r = 0; r < repeats; ++r) {
    const double c0 = cpu_ms(), t0 = now_ms();
    const HeadOutput<S> out = gla::chunk_head(head, scale, s.C);
    const double t1 = now_ms();
    const HeadGrads<S> grads = gla::chunk_backward_head(head, cot, scale, s.C);
    const double t2 = now_ms(), c2 = cpu_ms();
    if (!is_finite(out.o(0, 0)) || !is_finite(grads.dg(0, 0)))
      std::printf("# warning: non-finite result\n");
    best.fwd = std::min(best.fwd, t1 - t0);
    best.fwd_bwd = std::min(best.fwd_bwd, t2 - t0);
    best.cpu_fwd_bwd = std::min(best.cpu_fwd_bwd, c2 - c0);
  }
  return best;
}

/// The whole multi-head call, heads spread over `threads` threads.
template <Scalar S> Timing time_multi_head(const Shape4 &s, unsigned threads, int repeats) {
  const Inputs<S> in = draw_inputs<S>(s, 1);
  const Cotangents<S> ct = draw_cotangents<S>(s, 2);
  Options opts;
  opts.chunk_size = s.C;
  opts.threads = threads;
  Timing best;
  for (int r = 0; r < repeats; ++r) {
    const double c0 = cpu_ms(), t0 = now_ms();
    const Output<S> out = gla::chunk(in, opts);
    const double t1 = now_ms();
    const Grads<S> grads = gla::chunk_backward(in, ct, opts);
    const double t2 = now_ms(), c2 = cpu_ms();
    if (!is_finite(out.o[0]) || !is_finite(grads.dg[0]))
      std::printf("# warning: non-finite result\n");
    best.fwd = std::min(best.fwd, t1 - t0);
    best.fwd_bwd = std::min(best.fwd_bwd, t2 - t0);
    best.cpu_fwd_bwd = std::min(best.cpu_fwd_bwd, c2 - c0);
  }
  return best;
}

void print_row(const std::string &scalar, const Shape4 &s, std::size_t H, unsigned threads,
               const Timing &t) {
  std::printf("%-9s %6zu %5zu %5zu %4zu %3zu %7u %12.1f %12.1f %16.1f\n", scalar.c_str(), s.T, s.K,
              s.V, s.C, H, threads, t.fwd, t.fwd_bwd, t.cpu_fwd_bwd);
  std::fflush(stdout);
}

template <Scalar S> void run_scalar(const Shape4 &s, unsigned threads, int repeats, bool multi) {
  print_row(scalar_traits<S>::name(), s, 1, 1, time_one_head<S>(s, repeats));
  if (!multi)
    return;
  print_row(scalar_traits<S>::name(), s, s.H, 1, time_multi_head<S>(s, 1, repeats));
  if (threads > 1)
    print_row(scalar_traits<S>::name(), s, s.H, threads, time_multi_head<S>(s, threads, repeats));
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"Times the chunkwise GLA truth (forward, forward + backward)."};
  Shape4 s{4096, 128, 128, 64, 2};
  int repeats = 1;
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::string> scalars{"float128", "double"};
  bool no_multi = false;
  app.add_option("--T", s.T, "sequence length")->capture_default_str();
  app.add_option("--K", s.K, "key dimension")->capture_default_str();
  app.add_option("--V", s.V, "value dimension")->capture_default_str();
  app.add_option("--C", s.C, "chunk size")->capture_default_str();
  app.add_option("--heads", s.H, "heads of the multi-head call")->capture_default_str();
  app.add_option("--threads", threads, "threads of the multi-head call")->capture_default_str();
  app.add_option("--repeats", repeats, "runs per row; the best is shown")->capture_default_str();
  app.add_option("--scalars", scalars, "float128, double, long_double")
      ->delimiter(',')
      ->capture_default_str();
  app.add_flag("--no-multihead", no_multi, "time only the single head");
  CLI11_PARSE(app, argc, argv);

  std::printf("%-9s %6s %5s %5s %4s %3s %7s %12s %12s %16s\n", "scalar", "T", "K", "V", "C", "H",
              "threads", "ms fwd", "ms fwd+bwd", "cpu ms fwd+bwd");
  for (const std::string &name : scalars) {
    if (name == "float128")
      run_scalar<float128>(s, threads, repeats, !no_multi);
    else if (name == "double")
      run_scalar<double>(s, threads, repeats, !no_multi);
    else if (name == "long_double")
      run_scalar<long double>(s, threads, repeats, !no_multi);
    else
      std::printf("# unknown scalar %s\n", name.c_str());
  }
  return 0;
}
