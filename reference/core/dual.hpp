// ruleproof: dual numbers a + b eps (eps^2 = 0), for exact forward-mode derivatives.
#pragma once

#include <cmath>

#include "scalar.hpp"

namespace ruleproof {

/// \brief A dual number \f$ a + b\varepsilon \f$: evaluating f on \f$ x + \varepsilon \f$
/// gives \f$ f(x) + f'(x)\varepsilon \f$ with no truncation error (only the rounding of S).
template <class S> struct Dual {
  S a{}; ///< value
  S b{}; ///< derivative along the seeded direction

  Dual() = default;
  Dual(const S &value) : a(value) {} // NOLINT: a constant is a dual with zero derivative
  Dual(const S &value, const S &slope) : a(value), b(slope) {}
  explicit Dual(int value) : a(S(value)) {}

  Dual &operator+=(const Dual &y) {
    a += y.a, b += y.b;
    return *this;
  }
  Dual &operator-=(const Dual &y) {
    a -= y.a, b -= y.b;
    return *this;
  }
  Dual &operator*=(const Dual &y) {
    *this = *this * y;
    return *this;
  }
  Dual &operator/=(const Dual &y) {
    *this = *this / y;
    return *this;
  }

  friend Dual operator+(const Dual &x, const Dual &y) { return {x.a + y.a, x.b + y.b}; }
  friend Dual operator-(const Dual &x, const Dual &y) { return {x.a - y.a, x.b - y.b}; }
  friend Dual operator-(const Dual &x) { return {-x.a, -x.b}; }
  friend Dual operator*(const Dual &x, const Dual &y) { return {x.a * y.a, x.a * y.b + x.b * y.a}; }
  friend Dual operator/(const Dual &x, const Dual &y) {
    S q = x.a / y.a;
    return {q, (x.b - q * y.b) / y.a};
  }
  friend bool operator<(const Dual &x, const Dual &y) { return x.a < y.a; }
  friend bool operator>(const Dual &x, const Dual &y) { return x.a > y.a; }
  friend bool operator<=(const Dual &x, const Dual &y) { return x.a <= y.a; }
  friend bool operator>=(const Dual &x, const Dual &y) { return x.a >= y.a; }
  friend bool operator==(const Dual &x, const Dual &y) { return x.a == y.a && x.b == y.b; }
  friend bool operator!=(const Dual &x, const Dual &y) { return !(x == y); }

  friend Dual exp(const Dual &x) {
    using std::exp;
    S e = exp(x.a);
    return {e, e * x.b};
  }
  friend Dual log(const Dual &x) {
    using std::log;
    return {log(x.a), x.b / x.a};
  }
  friend Dual sqrt(const Dual &x) {
    using std::sqrt;
    S r = sqrt(x.a);
    return {r, x.b / (r + r)};
  }
  friend Dual sin(const Dual &x) {
    using std::cos;
    using std::sin;
    return {sin(x.a), cos(x.a) * x.b};
  }
  friend Dual cos(const Dual &x) {
    using std::cos;
    using std::sin;
    return {cos(x.a), -sin(x.a) * x.b};
  }
  friend Dual abs(const Dual &x) { return x.a < S(0) ? -x : x; }
  friend Dual max(const Dual &x, const Dual &y) { return x.a < y.a ? y : x; }
  friend Dual min(const Dual &x, const Dual &y) { return y.a < x.a ? y : x; }
};

template <Scalar S> struct scalar_traits<Dual<S>> {
  static std::string name() { return "dual<" + scalar_traits<S>::name() + ">"; }
  static Dual<S> epsilon() { return scalar_traits<S>::epsilon(); }
  static int digits10() { return scalar_traits<S>::digits10(); }
  static Dual<S> quiet_NaN() { return scalar_traits<S>::quiet_NaN(); }
  static Dual<S> infinity() { return scalar_traits<S>::infinity(); }
  static Dual<S> max_exponent_e() { return scalar_traits<S>::max_exponent_e(); }
  static constexpr bool is_exact = scalar_traits<S>::is_exact;
  static Dual<S> from_double(double x) { return scalar_traits<S>::from_double(x); }
  static double to_double(const Dual<S> &x) { return scalar_traits<S>::to_double(x.a); }
  static bool isfinite(const Dual<S> &x) {
    return scalar_traits<S>::isfinite(x.a) && scalar_traits<S>::isfinite(x.b);
  }
};

template <class S> inline constexpr bool parallel_ok<Dual<S>> = parallel_ok<S>;

} // namespace ruleproof

namespace Eigen {
template <class S> struct NumTraits<ruleproof::Dual<S>> : NumTraits<S> {
  using Real = ruleproof::Dual<S>;
  using NonInteger = ruleproof::Dual<S>;
  using Nested = ruleproof::Dual<S>;
  using Literal = ruleproof::Dual<S>;
  enum { IsComplex = 0, RequireInitialization = 1, ReadCost = 2, AddCost = 2, MulCost = 4 };
  static Real epsilon() { return NumTraits<S>::epsilon(); }
  static Real dummy_precision() { return NumTraits<S>::dummy_precision(); }
  static Real highest() { return NumTraits<S>::highest(); }
  static Real lowest() { return NumTraits<S>::lowest(); }
  static int digits10() { return NumTraits<S>::digits10(); }
};
template <class S, class BinaryOp> struct ScalarBinaryOpTraits<ruleproof::Dual<S>, S, BinaryOp> {
  using ReturnType = ruleproof::Dual<S>;
};
template <class S, class BinaryOp> struct ScalarBinaryOpTraits<S, ruleproof::Dual<S>, BinaryOp> {
  using ReturnType = ruleproof::Dual<S>;
};
} // namespace Eigen
