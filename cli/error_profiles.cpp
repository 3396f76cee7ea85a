// ruleproof verify's error profiles (error_profiles.hpp).
#include "error_profiles.hpp"

#include <algorithm>

#include <fmt/core.h>

#include "gpu/check.hpp"
#include "gpu/twin_float128.hpp"
#include "reference/core/seeds.hpp"
#include "reporting/profile.hpp"

namespace ruleproof::cli {
namespace {

using gpu::DType;
using gpu::KernelRule;

/// The sequence lengths of the growth: doubling, so a plot on a log axis spaces them evenly.
const std::size_t growth_lengths[] = {64, 128, 256, 512, 1024};

/// A case drawn as gpu-check draws its cases (bf16 storage, K = V = 64), with a slow gate
/// (g in [-1/16, 0)) so the state remembers far back and its error can accumulate.
gpu::check::Case profile_case(KernelRule rule, std::size_t T, std::size_t H, std::uint64_t seed) {
  gpu::check::Case c;
  c.rule = rule, c.storage = DType::bf16;
  c.B = 1, c.T = T, c.H = H, c.K = 64, c.V = 64;
  c.gate_scale = 1.0 / 16;
  c.seed =
      mix(seed ^ hash_of("error_profile/" + std::string(name_of(rule)) + "/" + std::to_string(T)));
  return c;
}

/// The growth's cases in words: what every T shares.
std::string sweep_text(const gpu::check::Case &c) {
  return fmt::format("{} {} B={} H={} K={} V={} gate_scale={}, one case drawn for each T",
                     name_of(c.rule), gpu::dtype_name(c.storage), c.B, c.H, c.K, c.V, c.gate_scale);
}

Inputs<double> in_double(const Inputs<float> &in) {
  const auto wide = [](const Tensor<float> &t) {
    return t.map<double>([](float x) { return double(x); });
  };
  return {wide(in.q),    wide(in.k),  wide(in.v), wide(in.g),
          wide(in.beta), wide(in.h0), wide(in.a), wide(in.b)};
}

/// o of the twin's fp32 arithmetic (before its store to bf16, whose one rounding would hide
/// how the sums' error grows) and of the chunkwise form in double, with the float128 truth, on
/// one drawn case (the stored inputs: every form sees the same numbers).
struct Outputs {
  Tensor<float> fp32;
  Tensor<double> chunk_double;
  Tensor<float128> truth;
};

Outputs outputs_of(const gpu::check::Case &c) {
  const gpu::check::Drawn d = gpu::check::draw(c);
  Options opts = d.opts;
  opts.chunk_size = gpu::kernel_chunk_size;
  return {gpu::chunk_forward_staged(c.rule, d.in, opts).out.o,
          gpu::chunk_forward_staged(c.rule, in_double(d.in), opts).out.o,
          gpu::chunk_forward_staged(c.rule, gpu::widen(d.in), opts).out.o};
}

const char *fp32_words =
    "the twin's fp32 arithmetic (bf16 inputs, o before its bf16 store) vs float128 truth";
const char *double_words = "chunkwise form in double vs float128 truth";

template <class S>
reports::ErrorProfile profile_of(const gpu::check::Case &c, const Tensor<S> &computed,
                                 const Tensor<float128> &truth, const std::string &compared,
                                 const std::string &scalar) {
  reports::ErrorProfile p = reports::error_profile(computed, truth, gpu::kernel_chunk_size);
  p.rule = name_of(c.rule), p.output = "o", p.compared = compared, p.scalar = scalar;
  p.case_text = c.describe();
  return p;
}

template <class S> double worst_error(const Tensor<S> &computed, const Tensor<float128> &truth) {
  double worst = 0;
  for (std::size_t i = 0; i < truth.size(); ++i)
    worst = reports::detail::worse(
        worst, std::abs(static_cast<double>(computed[i]) - static_cast<double>(truth[i])));
  return worst;
}

double max_abs(const Tensor<float128> &t) {
  double m = 0;
  for (std::size_t i = 0; i < t.size(); ++i)
    m = std::max(m, std::abs(static_cast<double>(t[i])));
  return m;
}

} // namespace

nlohmann::json kernel_error_profiles(const std::vector<std::string> &rules, std::uint64_t seed) {
  nlohmann::json profiles = nlohmann::json::array(), growth = nlohmann::json::array();
  for (const KernelRule rule : gpu::all_kernel_rules) {
    const std::string name(name_of(rule));
    if (std::find(rules.begin(), rules.end(), name) == rules.end())
      continue;
    const gpu::check::Case c = profile_case(rule, 200, 2, seed);
    const Outputs o = outputs_of(c);
    profiles.push_back(reports::to_json(profile_of(c, o.fp32, o.truth, fp32_words, "fp32")));
    profiles.push_back(
        reports::to_json(profile_of(c, o.chunk_double, o.truth, double_words, "double")));
    const std::string sweep = sweep_text(profile_case(rule, 0, 1, seed));
    reports::ErrorGrowth fp32{name, "o", fp32_words, "fp32", sweep, {}};
    reports::ErrorGrowth dbl{name, "o", double_words, "double", sweep, {}};
    for (const std::size_t T : growth_lengths) {
      const gpu::check::Case g = profile_case(rule, T, 1, seed);
      const Outputs at = outputs_of(g);
      const double truth_max = max_abs(at.truth);
      fp32.points.push_back({T, worst_error(at.fp32, at.truth), truth_max});
      dbl.points.push_back({T, worst_error(at.chunk_double, at.truth), truth_max});
    }
    growth.push_back(reports::to_json(fp32));
    growth.push_back(reports::to_json(dbl));
  }
  return {{"profiles", profiles}, {"growth", growth}};
}

} // namespace ruleproof::cli
