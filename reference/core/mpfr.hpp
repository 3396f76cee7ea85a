// ruleproof: MPFR at a precision chosen at run time, the slow and deeper truth.
#pragma once

#include <boost/multiprecision/mpfr.hpp>

#include "scalar.hpp"

#include <boost/multiprecision/eigen.hpp>

namespace ruleproof {

/// Run-time precision, expression templates off (an `auto` must never hold a reference).
using mpfr = boost::multiprecision::number<boost::multiprecision::mpfr_float_backend<0>,
                                           boost::multiprecision::et_off>;

/// Sets the precision of every mpfr made from now on (process-wide, MPFR's rule).
inline void set_mpfr_digits(unsigned digits10) { mpfr::default_precision(digits10); }

template <> struct scalar_traits<mpfr> {
  static std::string name() { return "mpfr" + std::to_string(mpfr::default_precision()); }
  static mpfr epsilon() { return std::numeric_limits<mpfr>::epsilon(); }
  static int digits10() { return static_cast<int>(mpfr::default_precision()); }
  static mpfr quiet_NaN() { return std::numeric_limits<mpfr>::quiet_NaN(); }
  static mpfr infinity() { return std::numeric_limits<mpfr>::infinity(); }
  static mpfr max_exponent_e() { return mpfr(1e6); } // MPFR's exponent range is far wider
  static constexpr bool is_exact = false;
  static mpfr from_double(double x) { return mpfr(x); }
  static double to_double(const mpfr &x) { return x.convert_to<double>(); }
  static bool isfinite(const mpfr &x) { return boost::multiprecision::isfinite(x); }
};

template <> inline constexpr bool parallel_ok<mpfr> = false;

} // namespace ruleproof
