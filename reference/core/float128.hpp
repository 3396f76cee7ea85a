// ruleproof: float128, the fast truth (34 decimal digits, GCC's __float128).
#pragma once

#include <boost/multiprecision/float128.hpp>

#include "scalar.hpp"

#include <boost/multiprecision/eigen.hpp>

namespace ruleproof {

using float128 = boost::multiprecision::float128;

template <> struct scalar_traits<float128> {
  static std::string name() { return "float128"; }
  static float128 epsilon() { return std::numeric_limits<float128>::epsilon(); }
  static int digits10() { return std::numeric_limits<float128>::digits10; }
  static float128 quiet_NaN() { return std::numeric_limits<float128>::quiet_NaN(); }
  static float128 infinity() { return std::numeric_limits<float128>::infinity(); }
  static float128 max_exponent_e() { return log(std::numeric_limits<float128>::max()); }
  static constexpr bool is_exact = false;
  static float128 from_double(double x) { return float128(x); }
  static double to_double(const float128 &x) { return static_cast<double>(x); }
  static bool isfinite(const float128 &x) { return boost::multiprecision::isfinite(x); }
};

} // namespace ruleproof

// float128's exact-significand matrix products, opt-in with the scalar itself.
#include "../shared/products_float128.hpp"
