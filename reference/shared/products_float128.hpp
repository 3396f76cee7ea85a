// ruleproof: exact-significand products for float128, the truth's fast path (shared by every
// rule's chunkwise form through shared/products.hpp's ExactProducts).
//
// float128 arithmetic is software (about 20 ns a multiply and 20 ns an add on the build
// machine), so a chunk's products dominate the truth's cost. For float128 each product
// C = A B is computed as exact-ish fixed-point dot products: every entry's terms a_l b_l
// are formed from the 113-bit significands with 64-bit integer multiplies (the top 128
// bits of the 226-bit product kept), aligned one bit below the largest term and summed in
// a 192-bit integer accumulator, then rounded once to float128 (to nearest, ties to even).
// Each entry's error is at most 4 k 2^-126 max_l |a_l b_l| plus that rounding: smaller than
// the gamma_k sum_l |a_l b_l| of the plain float128 loop, so results agree with it within
// its own rounding. Non-finite inputs take the plain path. The same dot products give
// row-wise sums of products and the forward substitution of a unit lower triangular inverse.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>

#include "../core/float128.hpp"
#include "products.hpp"

namespace ruleproof::shared {

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

/// The rows of a matrix (or of its transpose) as Parts, row r, term l at r * depth + l (left
/// uninitialised until set).
struct Split {
  std::unique_ptr<Parts[]> x;
  std::size_t rows = 0, depth = 0;
  bool finite = true;

  Split(std::size_t r, std::size_t k) : x(new Parts[r * k]), rows(r), depth(k) {}

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

/// The high word of a 64 x 64-bit product.
inline u64 mul_high(u64 a, u64 b) { return u64((u128(a) * b) >> 64); }

/// a + b + carry, the carry out (0 or 1) in carry.
inline u64 add_carry(u64 a, u64 b, u64 &carry) {
  const u64 s = a + b, c = s < a;
  const u64 r = s + carry;
  carry = c + (r < s);
  return r;
}

/// The top 128 bits of the 256-bit product of two significands (the dropped part is below
/// 3 units) shifted right by d >= 1 bits, as two words (t0 low, t1 high): hi hi' plus the
/// high words of the cross products; lo lo' never reaches them. Written in 64-bit words,
/// which the compiler keeps in registers.
inline void significand_product(const Parts &x, const Parts &y, std::int32_t d, u64 &t0, u64 &t1) {
  const u128 hh = u128(x.hi) * y.hi;
  u64 p0 = u64(hh), p1 = u64(hh >> 64), carry = 0;
  p0 = add_carry(p0, mul_high(x.hi, y.lo), carry);
  p1 += carry;
  carry = 0;
  p0 = add_carry(p0, mul_high(x.lo, y.hi), carry);
  p1 += carry;
  if (d < 64) {
    t0 = (p0 >> d) | (p1 << (64 - d));
    t1 = p1 >> d;
  } else {
    t0 = d < 128 ? p1 >> (d - 64) : 0;
    t1 = 0;
  }
}

/// The float128 nearest to (-1)^negative (w2 2^128 + w1 2^64 + w0) 2^scale, ties to even.
/// Normal results are assembled from their bits; the rare subnormal or out-of-range ones
/// take float128 arithmetic (one rounding of the sum, then scalbnq).
inline __float128 to_float128(bool negative, u64 w2, u64 w1, u64 w0, std::int32_t scale) {
  if ((w2 | w1 | w0) == 0)
    return 0;
  const u64 m2 = w2, m1 = w1, m0 = w0;
  int shift = 0; // normalise: the top bit to bit 191
  if (w2 == 0) {
    w2 = w1, w1 = w0, w0 = 0, shift = 64;
    if (w2 == 0)
      w2 = w1, w1 = 0, shift = 128;
  }
  if (const int lz = __builtin_clzll(w2); lz > 0) {
    w2 = (w2 << lz) | (w1 >> (64 - lz));
    w1 = (w1 << lz) | (w0 >> (64 - lz));
    w0 <<= lz;
    shift += lz;
  }
  u128 m = (u128(w2) << 49) | (w1 >> 15); // the top 113 bits
  const bool round = (w1 >> 14) & 1, sticky = ((w1 & 0x3fff) | w0) != 0;
  int exponent = 191 - shift + scale; // of the top bit
  if (round && (sticky || (m & 1)))
    m += 1;
  if (m >> 113) { // rounded up to the next power of two
    m >>= 1;
    exponent += 1;
  }
  const int biased = exponent + 16383;
  if (biased < 1 || biased > 0x7ffe) {
    const __float128 two64 = 18446744073709551616.0Q; // m2 2^64 + m1 is exact (m2 < 2^49)
    const __float128 mag = (__float128(m2) * two64 + __float128(m1)) * two64 + __float128(m0);
    const __float128 r = scalbnq(mag, scale);
    return negative ? -r : r;
  }
  const u128 bits = (u128(negative) << 127) | (u128(biased) << 112) | (m & ((u128(1) << 112) - 1));
  __float128 r;
  std::memcpy(&r, &bits, sizeof r);
  return r;
}

/// A fixed-point sum in 192 bits, two's complement (w2 2^128 + w1 2^64 + w0). A negative
/// term t is added as ~t + 1 (the 1 as the carry into the lowest word).
struct Accumulator {
  u64 w0 = 0, w1 = 0, w2 = 0;

  void add(u64 t0, u64 t1, bool negative) {
    const u64 mask = u64(0) - u64(negative); // all ones when the term is negative
    u64 carry = negative;
    w0 = add_carry(w0, t0 ^ mask, carry);
    w1 = add_carry(w1, t1 ^ mask, carry);
    w2 += mask + carry;
  }

  /// The sum times 2^scale, rounded once to float128.
  __float128 value(std::int32_t scale) const {
    const bool negative = std::int64_t(w2) < 0;
    if (!negative)
      return to_float128(false, w2, w1, w0, scale);
    u64 carry = 1; // the magnitude: ~w + 1
    const u64 v0 = add_carry(~w0, 0, carry), v1 = add_carry(~w1, 0, carry);
    return to_float128(true, ~w2 + carry, v1, v0, scale);
  }
};

/// One entry: sum over l in [l0, l1) of a_l b_l, a row i of a, b row j of b. Terms are
/// aligned one bit below the largest (so each fits a signed 128-bit integer) and summed
/// in 192 bits.
inline __float128 dot(const Split &a, std::size_t i, const Split &b, std::size_t j, std::size_t l0,
                      std::size_t l1) {
  const Parts *pa = a.x.get() + i * a.depth, *pb = b.x.get() + j * b.depth;
  std::int32_t E = 2 * zero_exponent, E_odd = 2 * zero_exponent; // two chains: faster
  std::size_t l = l0;
  for (; l + 1 < l1; l += 2) {
    E = std::max(E, pa[l].e + pb[l].e);
    E_odd = std::max(E_odd, pa[l + 1].e + pb[l + 1].e);
  }
  if (l < l1)
    E = std::max(E, pa[l].e + pb[l].e);
  E = std::max(E, E_odd); // the largest exponent of a term
  if (E < zero_exponent)  // every term is zero
    return 0;
  Accumulator sum;
  for (l = l0; l < l1; ++l) {
    const Parts &x = pa[l], &y = pb[l];
    u64 t0, t1; // the term, < 2^127
    significand_product(x, y, E - (x.e + y.e) + 1, t0, t1);
    sum.add(t0, t1, x.neg != y.neg);
  }
  return sum.value(E - 125);
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
      if (st == Structure::right_upper)
        l1 = std::min(l1, j + 1);
      c(i, j) = (st == Structure::lower_result && j > i) ? float128(0)
                                                         : float128(dot(a, i, b, j, l0, l1));
    }
  return c;
}

/// The unit lower triangular (I + N)^-1, N strictly lower, by forward substitution: row i
/// is e_i - sum_{j < i} N_ij X_j, each entry one dot product over the rows already found
/// (X_jc = 0 for j < c). The columns of X are kept split, filled as they are found.
inline Mat<float128> unit_lower_inverse(const Split &n) {
  const std::size_t size = n.rows;
  Mat<float128> X = Mat<float128>::Identity(size, size);
  Split columns(size, size); // row c: column c of X
  for (std::size_t c = 0; c < size; ++c)
    columns.set(c * size + c, 1);
  for (std::size_t i = 1; i < size; ++i)
    for (std::size_t c = 0; c < i; ++c) {
      const __float128 sum = dot(n, i, columns, c, c, i);
      const __float128 x = sum == 0 ? sum : -sum; // no negative zeros
      X(i, c) = float128(x);
      columns.set(c * size + i, x);
    }
  return X;
}

} // namespace quad

/// float128's exact products: every entry a fixed-point dot product rounded once; non-finite
/// inputs take the generic path.
template <> struct ExactProducts<float128> {
  static constexpr bool enabled = true;

  template <class MA, class MB>
  static std::optional<Mat<float128>> product(const MA &A, bool transpose_a, const MB &B,
                                              bool transpose_b, Structure st) {
    quad::Split a = quad::split_rows(A, transpose_a), b = quad::split_rows(B, !transpose_b);
    if (a.finite && b.finite)
      return quad::product(a, b, st);
    return std::nullopt;
  }

  static std::optional<Vec<float128>> row_dots(const Mat<float128> &A, const Mat<float128> &B) {
    const quad::Split a = quad::split_rows(A, false), b = quad::split_rows(B, false);
    if (!a.finite || !b.finite)
      return std::nullopt;
    Vec<float128> r(A.rows());
    for (std::size_t i = 0; i < a.rows; ++i)
      r(i) = float128(quad::dot(a, i, b, i, 0, a.depth));
    return r;
  }

  static std::optional<Mat<float128>> unit_lower_inverse(const Mat<float128> &N) {
    const quad::Split n = quad::split_rows(N, false);
    if (n.finite)
      return quad::unit_lower_inverse(n);
    return std::nullopt;
  }
};

} // namespace ruleproof::shared
