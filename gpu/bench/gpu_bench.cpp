// ruleproof: gpu_bench, how fast the chunkwise kernels run at one shape, and the floor the GPU
// allows there. CUDA only (built with the kernels); run it on the GPU machine:
//   gpu_bench [--B 4 --T 4096 --H 16 --K 128 --V 128] [--dtype bf16] [--warmup 5]
//             [--repeat 50] [--rule R ...] [--kernels cuda-cores --kernels tensor-cores]
//             [--fla fla_bench.json] [--out reports/out/gpu_bench.json]
//
// Each rule runs on each kernel path asked for (kernel_rule.hpp, KernelPath; a rule with no
// tensor-core kernels is timed on the CUDA-core path alone). With --fla (the JSON of
// tools/fla_bench.py, run on the same machine at the same shape), every figure is printed beside
// flash-linear-attention's, with the ratio ours / theirs, also written to the JSON.
//
// Timing: CUDA events around each call of the host API (gpu/chunk_gla.hpp,
// gpu/chunk_delta.hpp, gpu/chunk_dplr.hpp, gpu/chunk_gated_oja.hpp): the forward (no final
// state, no stages), and the forward then the backward (dO given, no dht). `--warmup` calls first,
// then the median of `--repeat`. On the CUDA-core path the host API synchronises after every
// kernel (so that a failing kernel is named); on the tensor-core path it only queues them (the
// chunk table too is copied in queued). Either takes its outputs from gpu/memory.cpp's block
// cache. All of it is part of what is timed.
//
// Floor: max(bytes / copy bandwidth, FLOPs / bf16 matrix rate), both rates measured here:
//   copy bandwidth   cudaMemcpy of 1 GiB device to device, bytes read + written over the
//                    median time of 20;
//   bf16 matrix rate cublasGemmEx 8192^3 (bf16 in, fp32 accumulation), median of 20;
//   bytes            every input read once, every output written once (io_bytes);
//   FLOPs            the matrix products of the chunkwise algorithm as the kernels form them,
//                    each counted whole (2 m n k) where a mask zeroes part (chunk_flops).
// Values are random, never zeros: q, k, v normal, with unit rows where the rule's state update
// subtracts a projection (k of the delta rules and dplr, v of gated_oja); dplr's a = -beta k,
// b = k (its delta-rule case); g = log sigmoid(x) / 16, x normal (g <= 0); beta uniform in
// (0, 1).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "gpu/chunk_delta.hpp"     // chunk_delta_fwd, chunk_delta_bwd
#include "gpu/chunk_dplr.hpp"      // chunk_dplr_fwd, chunk_dplr_bwd
#include "gpu/chunk_gated_oja.hpp" // chunk_gated_oja_fwd, chunk_gated_oja_bwd
#include "gpu/chunk_gla.hpp"       // chunk_gla_fwd, chunk_gla_bwd
#include "gpu/device.hpp"          // query_device
#include "gpu/kernel_rule.hpp"     // KernelRule, name_of, gate_of, is_delta, has_beta, has_ab

namespace {

using namespace ruleproof;
using namespace ruleproof::gpu;

void check_cuda(cudaError_t status, const char *what) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

/// The median time in ms of `repeat` calls of f, each between two CUDA events, after
/// `warmup` calls.
double median_ms(const std::function<void()> &f, int warmup, int repeat) {
  for (int i = 0; i < warmup; ++i)
    f();
  cudaEvent_t start, stop;
  check_cuda(cudaEventCreate(&start), "cudaEventCreate");
  check_cuda(cudaEventCreate(&stop), "cudaEventCreate");
  std::vector<double> ms;
  for (int i = 0; i < repeat; ++i) {
    check_cuda(cudaEventRecord(start), "cudaEventRecord");
    f();
    check_cuda(cudaEventRecord(stop), "cudaEventRecord");
    check_cuda(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float t = 0;
    check_cuda(cudaEventElapsedTime(&t, start, stop), "cudaEventElapsedTime");
    ms.push_back(t);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
  return ms[ms.size() / 2];
}

/// Bytes read + written per second by a device-to-device copy of 1 GiB.
double copy_bandwidth() {
  const std::size_t n = std::size_t{1} << 28; // fp32 elements: 1 GiB
  DeviceArray src(DType::fp32, {n}), dst(DType::fp32, {n});
  src.poison();
  const double ms = median_ms(
      [&] {
        check_cuda(cudaMemcpy(dst.data(), src.data(), src.bytes(), cudaMemcpyDeviceToDevice),
                   "cudaMemcpy");
      },
      3, 20);
  return 2.0 * static_cast<double>(src.bytes()) / (ms * 1e-3);
}

/// bf16 FLOP/s of cublasGemmEx on n x n x n random matrices, fp32 accumulation.
double matrix_rate(std::mt19937_64 &rng) {
  const int n = 8192;
  std::normal_distribution<float> normal;
  std::vector<float> values(static_cast<std::size_t>(n) * n);
  for (float &x : values)
    x = normal(rng);
  const Shape shape{static_cast<std::size_t>(n), static_cast<std::size_t>(n)};
  const DeviceArray a = DeviceArray::upload(DType::bf16, shape, values);
  const DeviceArray b = DeviceArray::upload(DType::bf16, shape, values);
  DeviceArray c(DType::bf16, shape);
  cublasHandle_t handle;
  if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error("cublasCreate failed");
  const float alpha = 1, beta = 0;
  const double ms = median_ms(
      [&] {
        if (cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a.data(), CUDA_R_16BF,
                         n, b.data(), CUDA_R_16BF, n, &beta, c.data(), CUDA_R_16BF, n,
                         CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS)
          throw std::runtime_error("cublasGemmEx failed");
      },
      3, 20);
  cublasDestroy(handle);
  return 2.0 * n * static_cast<double>(n) * n / (ms * 1e-3);
}

struct Shape4 {
  std::size_t B, T, H, K, V;
};

/// The tensors of one call, with random values (see the top of this file).
struct BenchInputs {
  DeviceArray q, k, v, a, b, g, beta, d_o;
};

/// Rows of x (width n) scaled to unit norm.
void unit_rows(std::vector<float> &x, std::size_t n) {
  for (std::size_t r = 0; r < x.size() / n; ++r) {
    float norm = 0;
    for (std::size_t c = 0; c < n; ++c)
      norm += x[r * n + c] * x[r * n + c];
    for (std::size_t c = 0; c < n; ++c)
      x[r * n + c] /= std::sqrt(norm);
  }
}

BenchInputs draw_inputs(KernelRule rule, const Shape4 &s, DType dtype, std::mt19937_64 &rng) {
  std::normal_distribution<float> normal;
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  const auto values = [&](std::size_t n, const std::function<float()> &draw) {
    std::vector<float> x(n);
    for (float &e : x)
      e = draw();
    return x;
  };
  const std::size_t rows = s.B * s.T * s.H;
  std::vector<float> k = values(rows * s.K, [&] { return normal(rng); });
  std::vector<float> v = values(rows * s.V, [&] { return normal(rng); });
  const std::vector<float> beta = values(rows, [&] { return uniform(rng); });
  if (is_delta(rule) || has_ab(rule)) // unit rows keep the state bounded
    unit_rows(k, s.K);
  if (rule == KernelRule::gated_oja)
    unit_rows(v, s.V);
  const GateKind gate = gate_of(rule);
  const std::size_t gate_cols = gate == GateKind::key ? s.K : gate == GateKind::value ? s.V : 1;
  const auto log_gate = [&] { return -std::log1p(std::exp(-normal(rng))) / 16; };
  BenchInputs in;
  in.q = DeviceArray::upload(dtype, {s.B, s.T, s.H, s.K},
                             values(rows * s.K, [&] { return normal(rng); }));
  in.k = DeviceArray::upload(dtype, {s.B, s.T, s.H, s.K}, k);
  in.v = DeviceArray::upload(dtype, {s.B, s.T, s.H, s.V}, v);
  in.g = gate_cols == 1 ? DeviceArray::upload(DType::fp32, {s.B, s.T, s.H}, values(rows, log_gate))
                        : DeviceArray::upload(DType::fp32, {s.B, s.T, s.H, gate_cols},
                                              values(rows * gate_cols, log_gate));
  if (has_beta(rule))
    in.beta = DeviceArray::upload(DType::fp32, {s.B, s.T, s.H}, beta);
  if (has_ab(rule)) { // a = -beta k, b = k
    std::vector<float> a = k;
    for (std::size_t i = 0; i < a.size(); ++i)
      a[i] *= -beta[i / s.K];
    in.a = DeviceArray::upload(dtype, {s.B, s.T, s.H, s.K}, a);
    in.b = DeviceArray::upload(dtype, {s.B, s.T, s.H, s.K}, k);
  }
  in.d_o = DeviceArray::upload(dtype, {s.B, s.T, s.H, s.V},
                               values(rows * s.V, [&] { return normal(rng); }));
  return in;
}

/// Bytes each input is read and each output written once: the forward reads q, k, v, (a, b,)
/// g, (beta) and writes o; the backward reads them and dO, and writes their gradients.
double io_bytes(const BenchInputs &in, bool backward) {
  const double inputs =
      static_cast<double>(in.q.bytes() + in.k.bytes() + in.v.bytes() + in.a.bytes() + in.b.bytes() +
                          in.g.bytes() + in.beta.bytes());
  const double o = static_cast<double>(in.d_o.bytes()); // o and dO alike
  const double forward = inputs + o;
  return backward ? forward + (inputs + o) + inputs : forward;
}

/// FLOPs of the chunkwise algorithm's matrix products, per chunk (C rows) and head, times the
/// chunks and heads; a product of m x k by k x n counts 2 m n k.
double chunk_flops(KernelRule rule, const Shape4 &s, bool backward) {
  const double C = kernel_chunk_size, K = static_cast<double>(s.K), V = static_cast<double>(s.V);
  const double qk = 2 * C * C * K, av = 2 * C * C * V, state = 2 * C * K * V;
  const double chunks =
      static_cast<double>(s.B * ((s.T + kernel_chunk_size - 1) / kernel_chunk_size) * s.H);
  // forward: scores Q K^T, their product with the values, Q h, and the state update K^T V
  double fwd = qk + av + 2 * state;
  if (is_delta(rule) || rule == KernelRule::gated_oja) // A0 = K K^T, (I + A0)^-1 (C^3 / 3),
    fwd += qk + C * C * C / 3 + qk + av + state;       // w = A K, u = A V, v_new = u - w h
  if (has_ab(rule)) // A_qa, A_ba, A_bk, E = (I + A_ba)^-1, w, c = -E A_bk V, v2 = c - w h, and
    fwd += 3 * qk + C * C * C / 3 + qk + av + av + 3 * state; // A_qa v2, a~^T v2 in the state
  if (!backward)
    return chunks * fwd;
  // backward: the forward's stages again; dh (Q^T dO); dA = dO V^T; dv = A^T dO + K dh;
  // dq = dO h^T + dA K; dk = dA^T Q + V dh^T
  double bwd = fwd + state + av + av + state + state + qk + qk + state;
  if (rule != KernelRule::simple_gla && rule != KernelRule::gla) // dh also takes W^T dv2;
    bwd += state + state + qk + av + qk + av + 2 * C * C * C;    // dw = dv2 h^T; through the WY
  // products: dA from dw and du, dk from A^T dw, dv from A^T du, dA through the inverse
  if (has_ab(rule)) // the second pair: A_qa, A_ba, A_bk and the state's a~^T v2 term, again
    bwd += 3 * qk + 2 * av + 2 * state;
  return chunks * (fwd + bwd);
}

/// One timed call of the forward, and of the forward then the backward.
struct Calls {
  std::function<DeviceArray()> forward;
  std::function<void()> forward_backward;
};

Calls calls_of(KernelRule rule, const BenchInputs &in, KernelPath path) {
  ChunkOptions opts;
  opts.output_final_state = false;
  opts.path = path;
  const GateKind gate = gate_of(rule);
  if (has_ab(rule)) {
    DplrArgs a{&in.q, &in.k, &in.v, &in.a, &in.b, &in.g, nullptr};
    return {[=] { return chunk_dplr_fwd(a, opts).o; },
            [=, &in] {
              chunk_dplr_fwd(a, opts);
              chunk_dplr_bwd(a, in.d_o, nullptr, opts);
            }};
  }
  // the delta rules' and gated_oja's tensor-core backward starts from the forward's A
  // (DeltaSaved), as a training step would; RULEPROOF_BWD_FROM_A=0 makes it solve again, and
  // RULEPROOF_BWD_FROM_A=factors keeps the delta rules' WY factors too (keep_factors)
  const char *from_a_env = std::getenv("RULEPROOF_BWD_FROM_A");
  const std::string_view from_a = from_a_env ? from_a_env : "";
  ChunkOptions keep = opts;
  keep.keep_for_backward = path == KernelPath::tensor_cores && from_a != "0";
  keep.keep_factors = keep.keep_for_backward && from_a == "factors";
  if (rule == KernelRule::gated_oja) {
    GatedOjaArgs a{&in.q, &in.k, &in.v, &in.g, &in.beta, nullptr};
    return {[=] { return chunk_gated_oja_fwd(a, opts).o; },
            [=, &in] {
              const GatedOjaForward f = chunk_gated_oja_fwd(a, keep);
              chunk_gated_oja_bwd(a, in.d_o, nullptr, opts, &f.saved);
            }};
  }
  if (is_delta(rule)) {
    DeltaArgs a{&in.q, &in.k, &in.v, &in.g, &in.beta, nullptr};
    return {[=] { return chunk_delta_fwd(gate, a, opts).o; },
            [=, &in] {
              const DeltaForward f = chunk_delta_fwd(gate, a, keep);
              chunk_delta_bwd(gate, a, in.d_o, nullptr, opts, &f.saved);
            }};
  }
  GlaArgs a{&in.q, &in.k, &in.v, &in.g, nullptr};
  return {[=] { return chunk_gla_fwd(gate, a, opts).o; },
          [=, &in] {
            chunk_gla_fwd(gate, a, opts);
            chunk_gla_bwd(gate, a, in.d_o, nullptr, opts);
          }};
}

/// flash-linear-attention's time for `rule` (fwd_ms or fwd_bwd_ms) from tools/fla_bench.py's
/// JSON (its "rules", or the rules at the top level as older files hold them, dplr_fla there
/// called dplr); empty where it has none.
std::optional<double> fla_ms(const nlohmann::json &fla, KernelRule rule, bool backward) {
  const nlohmann::json &rules = fla.contains("rules") ? fla["rules"] : fla;
  std::string name(name_of(rule));
  if (!rules.contains(name) && name == "dplr_fla")
    name = "dplr";
  const char *key = backward ? "fwd_bwd_ms" : "fwd_ms";
  if (!rules.contains(name) || !rules[name].contains(key))
    return std::nullopt;
  return rules[name][key].get<double>();
}

std::size_t non_finite(const DeviceArray &a) {
  const std::vector<float> x = a.download();
  return static_cast<std::size_t>(
      std::count_if(x.begin(), x.end(), [](float e) { return !std::isfinite(e); }));
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"gpu_bench: the chunkwise kernels' speed at one shape, against the floor "
               "(bytes over measured copy bandwidth, FLOPs over measured bf16 matrix rate)"};
  Shape4 s{4, 4096, 16, 128, 128};
  std::string dtype_name = "bf16", out = "reports/out/gpu_bench.json";
  int warmup = 5, repeat = 50;
  std::vector<std::string> rules;
  app.add_option("--B", s.B, "batch")->capture_default_str();
  app.add_option("--T", s.T, "sequence length")->capture_default_str();
  app.add_option("--H", s.H, "heads")->capture_default_str();
  app.add_option("--K", s.K, "key width (64 or 128)")->capture_default_str();
  app.add_option("--V", s.V, "value width (64 or 128)")->capture_default_str();
  app.add_option("--dtype", dtype_name, "bf16 or fp16")
      ->check(CLI::IsMember({"bf16", "fp16"}))
      ->capture_default_str();
  app.add_option("--warmup", warmup, "untimed calls first")->capture_default_str();
  app.add_option("--repeat", repeat, "timed calls; the median is reported")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--rule", rules, "rules to time (default: every kernel rule)");
  const std::vector<std::string> paths{path_name(KernelPath::cuda_cores),
                                       path_name(KernelPath::tensor_cores)};
  std::vector<std::string> kernels = paths;
  app.add_option("--kernels", kernels,
                 "kernel paths to time (repeatable): cuda-cores, tensor-cores (a rule without "
                 "tensor-core kernels runs on CUDA cores alone)")
      ->check(CLI::IsMember(paths))
      ->capture_default_str();
  std::string fla_path;
  app.add_option("--fla", fla_path,
                 "flash-linear-attention's times at this shape on this machine "
                 "(tools/fla_bench.py's JSON): printed beside each figure, with the ratio")
      ->check(CLI::ExistingFile);
  app.add_option("--out", out, "JSON of the results (a Markdown table goes beside it)")
      ->capture_default_str();
  app.footer(
      "Environment (the tensor-core path; all but factors, fused and the timeline keep an earlier "
      "version to time):\n"
      "  RULEPROOF_BWD_FROM_A=0        the delta rules' and gated_oja's backward solves again\n"
      "                                (default: from the forward's saved A)\n"
      "  RULEPROOF_BWD_FROM_A=factors  the delta rules' forward keeps its WY factors too, and\n"
      "                                the backward runs no WY pass (keep_factors; not\n"
      "                                gated_delta_rule's under fused, fused_a or held)\n"
      "  RULEPROOF_DELTA_FORWARD=two   gated_delta_rule's forward as the WY kernel, then the\n"
      "                                sequential kernel (default on devices other than 9.0)\n"
      "  RULEPROOF_DELTA_FORWARD=fused its forward in one kernel on warpgroup MMA, its solve\n"
      "                                inside; its backward's stages from A in that kernel\n"
      "  RULEPROOF_DELTA_FORWARD=fused_a  every chunk's A first, then that kernel without the\n"
      "                                solve; the backward as fused's\n"
      "  RULEPROOF_DELTA_FORWARD=held  every chunk's A first, then the forward with the state\n"
      "                                held in registers (default on compute capability 9.0);\n"
      "                                the backward as fused's\n"
      "  RULEPROOF_FUSED_TIMELINE=FILE with fused, fused_a or held (its phases in the\n"
      "                                places of the others'), and simple_gla's one-kernel\n"
      "                                forward: each forward appends its block (0, 0, 0)'s\n"
      "                                phase times to FILE and waits for its kernel (a\n"
      "                                diagnostic; gpu/bench/fused_timeline.py)\n"
      "  RULEPROOF_GLA_FORWARD=two     simple_gla's forward as the scores kernel, then the\n"
      "                                sequential kernel (default on devices other than 9.0;\n"
      "                                on 9.0 the held kernel's plain form, in one kernel)\n"
      "  RULEPROOF_GLA_FORWARD=fused   simple_gla's forward in the fused kernel's plain form\n"
      "  RULEPROOF_OJA_SPLIT=1|2       gated_oja's output kernel over fewer blocks a chunk (4)\n"
      "  RULEPROOF_WY_KERNEL=two       gated_delta_rule's WY kernel of two blocks an SM\n"
      "  RULEPROOF_STATE_OUTPUT=own    the sequential kernel without its output warps");
  CLI11_PARSE(app, argc, argv);
  nlohmann::json fla;
  if (!fla_path.empty()) {
    try {
      fla = nlohmann::json::parse(std::ifstream(fla_path));
    } catch (const std::exception &e) {
      fmt::print(stderr, "gpu_bench: --fla {}: not JSON: {}\n", fla_path, e.what());
      return 2;
    }
  }
  try {
    const DeviceInfo info = query_device();
    if (!info.available) {
      fmt::print(stderr, "gpu_bench: no GPU to time on: {}\n", info.description);
      return 3;
    }
    const DType dtype = dtype_name == "fp16" ? DType::fp16 : DType::bf16;
    std::vector<KernelRule> chosen;
    for (KernelRule r : all_kernel_rules)
      if (rules.empty() || std::count(rules.begin(), rules.end(), name_of(r)))
        chosen.push_back(r);
    std::mt19937_64 rng(20261121);
    fmt::print("gpu_bench on {}\n", info.description);
    const double bandwidth = copy_bandwidth(), rate = matrix_rate(rng);
    fmt::print("copy bandwidth {:.2f} TB/s (read + written), bf16 matrix rate {:.0f} TFLOP/s\n",
               bandwidth / 1e12, rate / 1e12);
    nlohmann::json j;
    j["device"] = info.description;
    j["shape"] = {{"B", s.B}, {"T", s.T}, {"H", s.H}, {"K", s.K}, {"V", s.V}};
    j["dtype"] = dtype_name;
    j["warmup"] = warmup;
    j["repeat"] = repeat;
    j["copy_bandwidth_bytes_per_s"] = bandwidth;
    j["matrix_rate_flops_per_s"] = rate;
    if (!fla_path.empty())
      j["fla"] = fla;
    std::string table = fmt::format(
        "| rule | kernels | pass | median ms | bytes (MB) | FLOPs (G) | floor ms | ms / floor | "
        "flash-linear-attention ms | ours / theirs |\n|---|---|---|---|---|---|---|---|---|---|\n");
    for (KernelRule rule : chosen) {
      const BenchInputs in = draw_inputs(rule, s, dtype, rng);
      for (const std::string &kernel_name : kernels) {
        const KernelPath path = path_named(kernel_name);
        if (path == KernelPath::tensor_cores && !has_tensor_core_forward(rule))
          continue;
        const Calls calls = calls_of(rule, in, path);
        const std::size_t bad = non_finite(calls.forward());
        for (bool backward : {false, true}) {
          const double ms = backward ? median_ms(calls.forward_backward, warmup, repeat)
                                     : median_ms([&] { calls.forward(); }, warmup, repeat);
          const double bytes = io_bytes(in, backward), flops = chunk_flops(rule, s, backward);
          const double floor_ms = 1e3 * std::max(bytes / bandwidth, flops / rate);
          const char *pass = backward ? "fwd+bwd" : "fwd";
          const std::optional<double> theirs = fla_ms(fla, rule, backward);
          const std::string beside =
              theirs ? fmt::format("   flash-linear-attention {:.3f} ms, ours / theirs {:.2f}",
                                   *theirs, ms / *theirs)
                     : "";
          fmt::print("{:<18} {:<13} {:<8} {:9.3f} ms   floor {:.3f} ms ({:.1f}x){}{}\n",
                     name_of(rule), kernel_name, pass, ms, floor_ms, ms / floor_ms, beside,
                     bad ? fmt::format("   {} non-finite outputs", bad) : "");
          table += fmt::format(
              "| {} | {} | {} | {:.3f} | {:.0f} | {:.1f} | {:.3f} | {:.1f} | {} | {} |\n",
              name_of(rule), kernel_name, pass, ms, bytes / 1e6, flops / 1e9, floor_ms,
              ms / floor_ms, theirs ? fmt::format("{:.3f}", *theirs) : "",
              theirs ? fmt::format("{:.2f}", ms / *theirs) : "");
          nlohmann::json row = {{"rule", std::string(name_of(rule))},
                                {"kernels", kernel_name},
                                {"pass", pass},
                                {"median_ms", ms},
                                {"bytes", bytes},
                                {"flops", flops},
                                {"floor_ms", floor_ms},
                                {"non_finite_outputs", bad}};
          if (theirs) {
            row["fla_ms"] = *theirs;
            row["ratio_to_fla"] = ms / *theirs;
          }
          j["results"].push_back(row);
        }
      }
    }
    std::ofstream(out) << j.dump(2) << "\n";
    const std::string md = out.substr(0, out.rfind('.')) + ".md";
    std::ofstream(md) << table;
    fmt::print("wrote {} and {}\n", out, md);
    return 0;
  } catch (const std::exception &e) {
    fmt::print(stderr, "gpu_bench: {}\n", e.what());
    return 1;
  }
}
