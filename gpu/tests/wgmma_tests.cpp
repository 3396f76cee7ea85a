// ruleproof: warpgroup MMA (gpu/detail/wgmma.cuh) against the exact product. One warpgroup
// computes D = A B^T (64 x 64, K = 128) from the shared-memory layouts of wgmma.cuh, each factor
// K-major and MN-major, in core matrices without swizzle and in 128-byte-swizzled panels, bf16 and
// fp16, with descriptors made for each step and made once and moved (wgmma::moved); and a
// warpgroup's accumulator stored transposed into a swizzled panel against the permutation written
// out (gpu/tests/tile_layouts.hpp), bit for bit, D untransposed its failing side; label `gpu`
// (skipped where no Hopper GPU is found, gpu_main.cpp).
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
#include "gpu/tests/tile_layouts.hpp"
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
  for (const bool moved : {false, true})
    for (const bool swizzled : {false, true})
      for (const bool fp16 : {false, true})
        for (const bool a_mn : {false, true})
          for (const bool b_mn : {false, true}) {
            if (moved && !swizzled && (a_mn || b_mn))
              continue; // no offset function for an MN-major tile without swizzle
            const Operands x = draw(fp16, 11u + (fp16 ? 2u : 0u) + (b_mn ? 1u : 0u) +
                                              (a_mn ? 4u : 0u) + (swizzled ? 8u : 0u));
            std::vector<double> exact, magnitude;
            exact_product(x, exact, magnitude);
            const char *type = fp16 ? "fp16" : "bf16";
            const char *b_layout = b_mn ? "B MN-major" : "B K-major";
            const char *a_layout = a_mn ? "A MN-major" : "A K-major";
            const char *panels = swizzled ? "swizzled" : "core matrices";
            const char *made = moved ? ", descriptors moved" : "";
            const double good = worst_over_bound(
                test::wgmma_tile_product(x.a, x.bt, fp16, {b_mn, a_mn, false, swizzled, moved}),
                exact, magnitude);
            std::printf("wgmma %s %s %s %s%s: worst error over bound %.3g\n", panels, type,
                        a_layout, b_layout, made, good);
            std::fflush(stdout);
            const double swapped = worst_over_bound(
                test::wgmma_tile_product(x.a, x.bt, fp16, {b_mn, a_mn, true, swizzled, moved}),
                exact, magnitude);
            std::printf("wgmma %s %s %s %s%s, offsets swapped: worst error over bound %.3g\n",
                        panels, type, a_layout, b_layout, made, swapped);
            INFO(panels << ", " << type << ", " << a_layout << ", " << b_layout << made
                        << ": worst error over bound " << good << ", with the offsets swapped "
                        << swapped);
            CHECK(good <= 1.0);
            CHECK(swapped > 1.0);
          }
}

TEST_CASE("wgmma_accumulator_stored_transposed_into_a_swizzled_panel", "[gpu][wgmma]") {
  for (const bool fp16 : {false, true}) {
    // D(i, j): a value of the type with its own bits for each entry (1.0's bits plus i 64 + j,
    // all finite), so that the place of every entry shows and the rounding to the type is exact
    std::vector<float> d(WGMMA_M * WGMMA_N);
    std::vector<std::uint16_t> expected(d.size()), untransposed(d.size());
    for (int i = 0; i < WGMMA_M; ++i)
      for (int j = 0; j < WGMMA_N; ++j) {
        const auto bits = static_cast<std::uint16_t>((fp16 ? 0x3C00 : 0x3F80) + i * WGMMA_N + j);
        d[i * WGMMA_N + j] = fp16 ? fp16_value(bits) : bf16_value(bits);
        expected[test::swizzled_at<WGMMA_N>(j, i)] = bits; // D^T: D(i, j) at row j, column i
        untransposed[test::swizzled_at<WGMMA_M>(i, j)] = bits;
      }
    const std::vector<std::uint16_t> got = test::wgmma_store_transposed(d, fp16);
    INFO((fp16 ? "fp16" : "bf16"));
    CHECK(got == expected);
    CHECK(got !=
          untransposed); // the failing side: D as it is, untransposed, is not what was stored
  }
}
