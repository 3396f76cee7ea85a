// ruleproof: what a scalar type offers, in one trait (NumTraits-like).
#pragma once

#include <cmath>
#include <concepts>
#include <limits>
#include <string>

#include <Eigen/Core>

namespace ruleproof {

/// \brief What the reference code needs to know about a number type.
///
/// Specialised for float, double, long double here, for float128 in float128.hpp,
/// MPFR in mpfr.hpp and dual numbers in dual.hpp. `epsilon()` is the unit roundoff
/// times two (machine epsilon), `digits10()` the decimal digits it carries.
template <class S> struct scalar_traits;

/// \brief A scalar the reference implementations accept: the trait must say its name,
/// epsilon, digits, a NaN, whether it is exact, and convert from double.
template <class S>
concept Scalar = requires(double x) {
  { scalar_traits<S>::name() } -> std::convertible_to<std::string>;
  { scalar_traits<S>::epsilon() } -> std::convertible_to<S>;
  { scalar_traits<S>::digits10() } -> std::convertible_to<int>;
  { scalar_traits<S>::quiet_NaN() } -> std::convertible_to<S>;
  { scalar_traits<S>::is_exact } -> std::convertible_to<bool>;
  { scalar_traits<S>::from_double(x) } -> std::convertible_to<S>;
  { scalar_traits<S>::to_double(std::declval<S>()) } -> std::convertible_to<double>;
};

namespace detail {
template <class F> struct builtin_float_traits {
  static F epsilon() { return std::numeric_limits<F>::epsilon(); }
  static int digits10() { return std::numeric_limits<F>::digits10; }
  static F quiet_NaN() { return std::numeric_limits<F>::quiet_NaN(); }
  static F infinity() { return std::numeric_limits<F>::infinity(); }
  static F max_exponent_e() { return std::log(std::numeric_limits<F>::max()); }
  static constexpr bool is_exact = false;
  static F from_double(double x) { return static_cast<F>(x); }
  static double to_double(const F &x) { return static_cast<double>(x); }
  static bool isfinite(const F &x) { return std::isfinite(x); }
};
} // namespace detail

template <> struct scalar_traits<float> : detail::builtin_float_traits<float> {
  static std::string name() { return "float"; }
};
template <> struct scalar_traits<double> : detail::builtin_float_traits<double> {
  static std::string name() { return "double"; }
};
template <> struct scalar_traits<long double> : detail::builtin_float_traits<long double> {
  static std::string name() { return "long_double"; }
};

template <class S> using Mat = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic>;
template <class S> using Vec = Eigen::Matrix<S, Eigen::Dynamic, 1>;

/// Convert a double to S without a silent detour through another type.
template <Scalar S> S from_double(double x) { return scalar_traits<S>::from_double(x); }
template <Scalar S> double to_double(const S &x) { return scalar_traits<S>::to_double(x); }
template <Scalar S> bool is_finite(const S &x) { return scalar_traits<S>::isfinite(x); }

/// Whether worker threads may compute in S (MPFR's precision setting is per thread).
template <class S> inline constexpr bool parallel_ok = true;

} // namespace ruleproof
