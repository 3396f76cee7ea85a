// ruleproof: warpgroup MMA (gpu/detail/wgmma.cuh) against the exact product. One warpgroup
// computes D = A B^T (64 x 64, K = 128) from the shared-memory layouts of wgmma.cuh, each factor
// K-major and MN-major, in core matrices without swizzle and in 128-byte-swizzled panels, bf16 and
// fp16; label `gpu` (skipped where no Hopper GPU is found,
// gpu_main.cpp).
//
// The bound: the products of two 16-bit values are exact in fp32, so D's only error is that of
// its fp32 sums, at most gamma_K sum_k |a_ik b_jk| with gamma_K = K u / (1 - K u) (Higham,
// "Accuracy and Stability of Numerical Algorithms", 2nd ed., eq. 3.5); u = 2^-23, fp32's machine
// epsilon, covers sums that truncate instead of rounding (twice fp32's unit roundoff). The same
// product with the descriptors' two core-matrix offsets swapped reads the wrong elements: it
// must miss the bound (the test's failing side).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "gpu/rounding.hpp"
#include "gpu/tests/wgmma_product.hpp"

using namespace ruleproof::gpu;
using ruleproof::gpu::test::WGMMA_K;
using ruleproof::gpu::test::WGMMA_M;
using ruleproof::gpu::test::WGMMA_N;

namespace {

struct Operands {
  std::vector<std::uint16_t> a, bt; // the bits
  std::vector<float> a_value, bt_value;
};

Operands draw(bool fp16, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Operands x;
  const auto fill = [&](std::vector<std::uint16_t> &bits, std::vector<float> &value, int n) {
    for (int i = 0; i < n; ++i) {
      const float y = normal(rng);
      bits.push_back(fp16 ? fp16_bits(y) : bf16_bits(y));
      value.push_back(fp16 ? fp16_value(bits.back()) : bf16_value(bits.back()));
    }
  };
  fill(x.a, x.a_value, WGMMA_M * WGMMA_K);
  fill(x.bt, x.bt_value, WGMMA_N * WGMMA_K);
  return x;
}

// D = A B^T in double (exact here: each product of two 16-bit values and their sum of 128 fit
// double's 53 bits), and sum_k |a_ik b_jk|
void exact_product(const Operands &x, std::vector<double> &d, std::vector<double> &magnitude) {
  d.assign(WGMMA_M * WGMMA_N, 0.0);
  magnitude.assign(WGMMA_M * WGMMA_N, 0.0);
  for (int i = 0; i < WGMMA_M; ++i)
    for (int j = 0; j < WGMMA_N; ++j)
      for (int k = 0; k < WGMMA_K; ++k) {
        const double p = static_cast<double>(x.a_value[i * WGMMA_K + k]) *
                         static_cast<double>(x.bt_value[j * WGMMA_K + k]);
        d[i * WGMMA_N + j] += p;
        magnitude[i * WGMMA_N + j] += std::fabs(p);
      }
}

// the largest |D - exact| / bound over the entries
double worst_over_bound(const std::vector<float> &d, const std::vector<double> &exact,
                        const std::vector<double> &magnitude) {
  const double u = std::ldexp(1.0, -23), gamma = WGMMA_K * u / (1.0 - WGMMA_K * u);
  double worst = 0.0;
  for (std::size_t e = 0; e < exact.size(); ++e) {
    const double bound = gamma * magnitude[e];
    const double err = std::fabs(static_cast<double>(d[e]) - exact[e]);
    worst = std::max(worst, std::isfinite(d[e]) ? err / bound : INFINITY);
  }
  return worst;
}

} // namespace

TEST_CASE("wgmma_tile_product_within_the_fp32_sum_bound", "[gpu][wgmma]") {
  for (const bool swizzled : {false, true})
    for (const bool fp16 : {false, true})
      for (const bool a_mn : {false, true})
        for (const bool b_mn : {false, true}) {
          const Operands x = draw(fp16, 11u + (fp16 ? 2u : 0u) + (b_mn ? 1u : 0u) +
                                            (a_mn ? 4u : 0u) + (swizzled ? 8u : 0u));
          std::vector<double> exact, magnitude;
          exact_product(x, exact, magnitude);
          const char *type = fp16 ? "fp16" : "bf16", *b_layout = b_mn ? "B MN-major" : "B K-major";
          const char *a_layout = a_mn ? "A MN-major" : "A K-major";
          const char *panels = swizzled ? "swizzled" : "core matrices";
          const double good = worst_over_bound(
              test::wgmma_tile_product(x.a, x.bt, fp16, {b_mn, a_mn, false, swizzled}), exact,
              magnitude);
          std::printf("wgmma %s %s %s %s: worst error over bound %.3g\n", panels, type, a_layout,
                      b_layout, good);
          std::fflush(stdout);
          const double swapped = worst_over_bound(
              test::wgmma_tile_product(x.a, x.bt, fp16, {b_mn, a_mn, true, swizzled}), exact,
              magnitude);
          std::printf("wgmma %s %s %s %s, offsets swapped: worst error over bound %.3g\n", panels,
                      type, a_layout, b_layout, swapped);
          INFO(panels << ", " << type << ", " << a_layout << ", " << b_layout
                      << ": worst error over bound " << good << ", with the offsets swapped "
                      << swapped);
          CHECK(good <= 1.0);
          CHECK(swapped > 1.0);
        }
}
