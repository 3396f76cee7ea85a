// ruleproof: the matrix products of the chunkwise forms, with a fast path for float128.
//
// float128 arithmetic is software (about 20 ns a multiply and 20 ns an add on the build
// machine), so a chunk's products dominate the truth's cost. For float128 each product
// C = A B is computed as exact-ish fixed-point dot products: every entry's terms a_l b_l
// are formed from the 113-bit significands with 64-bit integer multiplies (the top 128
// bits of the 226-bit product kept), aligned one bit below the largest term and summed in
// a 192-bit integer accumulator, then rounded once to float128. Each entry's error is at
// most 4 k 2^-126 max_l |a_l b_l| plus one rounding: smaller than the gamma_k sum_l |a_l b_l|
// of the plain float128 loop, so results agree with it within its own rounding.
// Non-finite inputs take the plain path. Other scalars use Eigen's products.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "../core/float128.hpp"
#include "../core/scalar.hpp"

namespace ruleproof::gla::detail {

/// Which terms a product computes: all; only the lower triangle of the result (j <= i);
/// or, the left factor being lower (l <= i) or upper (l >= i) triangular, only those terms.
enum class Structure { full, lower_result, left_lower, left_upper };

namespace quad {

using u64 = std::uint64_t;
using u128 = unsigned __int128;

constexpr std::int32_t zero_exponent = -(1 << 28); ///< exponent given to zeros: never aligned

/// One float128 as significand (left-aligned in 128 bits: hi, lo), exponent and sign:
/// x = (-1)^neg (hi 2^64 + lo) 2^(e - 127), hi >= 2^63 unless x = 0.
struct Parts {
  u64 hi, lo;
  std::int32_t e;
  std::uint32_t neg; ///< 1 when x < 0
};

/// The rows of a matrix (or of its transpose) as Parts, row r, term l at r * depth + l.
struct Split {
  std::vector<Parts> x;
  std::size_t rows = 0, depth = 0;
  bool finite = true;

  Split(std::size_t r, std::size_t k) : x(r * k), rows(r), depth(k) {}

  void set(std::size_t i, __float128 value) {
    u128 bits;
    std::memcpy(&bits, &value, sizeof bits);
    Parts &p = x[i];
    p.neg = std::uint32_t(bits >> 127);
    const int biased = int((bits >> 112) & 0x7fff);
    const u128 frac = bits & ((u128(1) << 112) - 1);
    u128 m = 0;
    p.e = zero_exponent;
    if (biased == 0x7fff) {
      finite = false;
    } else if (biased == 0) { // zero or subnormal
      if (frac != 0) {
        const u64 top = u64(frac >> 64);
        const int lz = top ? __builtin_clzll(top) : 64 + __builtin_clzll(u64(frac));
        m = frac << lz;
        p.e = -16367 - lz;
      }
    } else {
      m = (frac | (u128(1) << 112)) << 15;
      p.e = biased - 16383;
    }
    p.hi = u64(m >> 64);
    p.lo = u64(m);
  }
};

/// Rows of M (or, transposed, its columns) as rows of a Split.
template <class M> Split split_rows(const M &m, bool transposed) {
  const std::size_t r = transposed ? m.cols() : m.rows(), k = transposed ? m.rows() : m.cols();
  Split s(r, k);
  for (std::size_t i = 0; i < r; ++i)
    for (std::size_t l = 0; l < k; ++l)
      s.set(i * k + l, (transposed ? m(l, i) : m(i, l)).backend().value());
  return s;
}

/// One entry: sum over l in [l0, l1) of a_l b_l, a row i of a, b row j of b. Terms are
/// aligned one bit below the largest (so each fits a signed 128-bit integer) and summed
/// in 192 bits: hi 2^128 + lo, two's complement.
inline __float128 dot(const Split &a, std::size_t i, const Split &b, std::size_t j, std::size_t l0,
                      std::size_t l1) {
  const Parts *pa = a.x.data() + i * a.depth, *pb = b.x.data() + j * b.depth;
  std::int32_t E = 2 * zero_exponent;
  for (std::size_t l = l0; l < l1; ++l) {
    const std::int32_t es = pa[l].e + pb[l].e;
    E = es > E ? es : E;
  }
  if (E < zero_exponent) // every term is zero
    return 0;
  u128 lo = 0;
  std::int64_t hi = 0;
  for (std::size_t l = l0; l < l1; ++l) {
    const Parts &x = pa[l], &y = pb[l];
    // top 128 bits of the 256-bit significand product (the dropped part is < 3 units)
    const u128 top = u128(x.hi) * y.hi + ((u128(x.hi) * y.lo) >> 64) + ((u128(x.lo) * y.hi) >> 64);
    const std::int32_t d = E - (x.e + y.e) + 1;
    const u128 t = d < 128 ? top >> d : 0;             // < 2^127
    const u128 mask = u128(0) - u128((x.neg ^ y.neg)); // all ones when the term is negative
    const u128 st = (t ^ mask) - mask; // the signed term in (-2^127, 2^127), two's complement
    const u128 sum = lo + st;
    hi += std::int64_t(sum < lo) + std::int64_t(__int128(st) >> 127); // carry, sign extension
    lo = sum;
  }
  bool negative = false; // the 192-bit sum as sign and magnitude
  if (hi < 0) {
    negative = true;
    lo = ~lo + 1;
    hi = std::int64_t(~u64(hi) + (lo == 0 ? 1 : 0));
  }
  const __float128 two64 = 18446744073709551616.0Q;
  // hi 2^64 + lo_hi < 2^76 is exact; one rounding when lo's low word is added
  const __float128 mag =
      (__float128(hi) * two64 + __float128(u64(lo >> 64))) * two64 + __float128(u64(lo));
  const __float128 r = scalbnq(mag, E - 125);
  return negative ? -r : r;
}

/// C = A B^T with A's rows in a, B's rows in b (both of depth k).
inline Mat<float128> product(const Split &a, const Split &b, Structure st) {
  Mat<float128> c(a.rows, b.rows);
  for (std::size_t j = 0; j < b.rows; ++j)
    for (std::size_t i = 0; i < a.rows; ++i) {
      std::size_t l0 = 0, l1 = a.depth;
      if (st == Structure::left_lower)
        l1 = std::min(l1, i + 1);
      if (st == Structure::left_upper)
        l0 = i;
      c(i, j) = (st == Structure::lower_result && j > i) ? float128(0)
                                                         : float128(dot(a, i, b, j, l0, l1));
    }
  return c;
}

} // namespace quad

/// Zeroes what the structure says is zero in the left factor or the result (generic path).
template <class S> Mat<S> masked_left(Mat<S> A, Structure st) {
  if (st == Structure::left_lower)
    A = Mat<S>(A.template triangularView<Eigen::Lower>());
  if (st == Structure::left_upper)
    A = Mat<S>(A.template triangularView<Eigen::Upper>());
  return A;
}

/// \brief \f$ \mathrm{op}(A)\, \mathrm{op}(B) \f$ with op the transpose where asked; the
/// structure says which terms count (see Structure).
template <class S, class MA, class MB>
Mat<S> product(const MA &A, bool transpose_a, const MB &B, bool transpose_b,
               Structure st = Structure::full) {
  if constexpr (std::is_same_v<S, float128>) {
    quad::Split a = quad::split_rows(A, transpose_a), b = quad::split_rows(B, !transpose_b);
    if (a.finite && b.finite)
      return quad::product(a, b, st);
  }
  const Mat<S> left = masked_left<S>(transpose_a ? Mat<S>(A.transpose()) : Mat<S>(A), st);
  Mat<S> c = transpose_b ? Mat<S>(left * B.transpose()) : Mat<S>(left * B);
  if (st == Structure::lower_result)
    c = Mat<S>(c.template triangularView<Eigen::Lower>());
  return c;
}

} // namespace ruleproof::gla::detail
