// ruleproof: exact numbers for the claims engine.
//
// A value is a rational r plus a rational combination of symbols. A symbol is the logarithm
// of a drawn rational gate (ell_j = log alpha_j) or the angle of a drawn rational rotation
// (theta_j, cos and sin rational). exp of an integer combination of gate symbols, and cos or
// sin of an integer combination of angle symbols, are rational again, so a reference form
// that takes exp of sums of log-gates runs exactly on these numbers, unchanged.
//
// Each value also carries bounds on the degrees of its numerator and denominator as a
// rational function of the drawn inputs (every drawn input a variable of degree 1). They
// follow the arithmetic step by step, so an identity's numerator degree, and with it the
// Schwartz-Zippel bound of a random test, is computed, never assumed.
#pragma once

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include <boost/multiprecision/gmp.hpp>
#include <boost/multiprecision/mpfr.hpp>

#include "reference/core/scalar.hpp"

namespace ruleproof::proofs {

using Rational = boost::multiprecision::mpq_rational;
/// 100 digits: enough to order two distinct values of the claims' small draws.
using Numeric = boost::multiprecision::number<boost::multiprecision::mpfr_float_backend<100>,
                                              boost::multiprecision::et_off>;

/// \brief A value left exact arithmetic (exp of a rational, a product of two symbolic
/// values, ...): the claim is then decided in MPFR instead.
struct NotExact : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// \brief A denominator vanished at the drawn point: the point is drawn again.
struct Pole : std::domain_error {
  using std::domain_error::domain_error;
};

/// \brief Bounds on deg(numerator) and deg(denominator) of a rational function.
struct Degree {
  long long num = 0, den = 0;
  friend bool operator==(const Degree &, const Degree &) = default;
};

namespace detail {
constexpr long long degree_cap = 1LL << 60;
inline long long add_degrees(long long a, long long b) { return std::min(a + b, degree_cap); }
} // namespace detail

/// \brief One symbol: ell = log(alpha) of a gate, or an angle theta with rational cos, sin.
struct Symbol {
  enum class Kind { log_gate, angle } kind;
  Rational alpha;       ///< log_gate: the gate alpha in (0, 1)
  Rational cos, sin;    ///< angle: cos theta, sin theta
  Numeric value;        ///< ell or theta, for ordering values
  long long degree = 1; ///< alpha is a variable of degree 1; (cos, sin) of degree (2, 2)
};

/// The symbols of the point being evaluated (one table per thread).
inline std::vector<Symbol> &symbol_table() {
  thread_local std::vector<Symbol> table;
  return table;
}

/// \brief A rational combination of symbols, sorted by symbol id.
struct Term {
  int symbol;
  Rational coefficient;
  friend bool operator==(const Term &, const Term &) = default;
};

class Exact {
public:
  Exact() = default;
  Exact(int x) : r_(x) {}             // NOLINT: integer literals in the reference code
  Exact(const Rational &x) : r_(x) {} // NOLINT: a constant of degree 0

  /// A drawn input: a variable of the identity, degree 1.
  static Exact variable(const Rational &x) {
    Exact e(x);
    e.deg_ = {1, 0};
    return e;
  }

  /// ell_j = log(alpha_j) for a drawn gate alpha_j in (0, 1).
  static Exact log_gate(const Rational &alpha) {
    if (!(alpha > 0 && alpha < 1))
      throw std::invalid_argument("a gate must lie in (0, 1)");
    Symbol s{Symbol::Kind::log_gate, alpha, 0, 0, 0, 1};
    s.value = log(Numeric(alpha));
    return from_symbol(std::move(s));
  }

  /// theta_j with cos = (1 - t^2) / (1 + t^2), sin = 2t / (1 + t^2) for a drawn rational t:
  /// every rational point of the circle but (-1, 0), as a rational function of t.
  static Exact angle(const Rational &t) {
    Symbol s{Symbol::Kind::angle, 0, (1 - t * t) / (1 + t * t), 2 * t / (1 + t * t), 0, 2};
    s.value = atan2(Numeric(s.sin), Numeric(s.cos));
    return from_symbol(std::move(s));
  }

  const Rational &rational() const { return r_; }
  const std::vector<Term> &terms() const { return terms_; }
  Degree degree() const { return deg_; }
  bool is_rational() const { return terms_.empty(); }

  /// The value to about 100 digits.
  Numeric numeric() const {
    Numeric x(r_);
    for (const Term &t : terms_)
      x += Numeric(t.coefficient) * symbol_table().at(t.symbol).value;
    return x;
  }

  friend Exact operator+(const Exact &x, const Exact &y) {
    Exact z;
    z.r_ = x.r_ + y.r_;
    z.deg_ = sum_degree(x, y);
    z.terms_ = merge(x.terms_, y.terms_, 1);
    z.terms_constant_ = x.terms_constant_ && y.terms_constant_;
    return z;
  }
  friend Exact operator-(const Exact &x) {
    Exact z = x;
    z.r_ = -z.r_;
    for (Term &t : z.terms_)
      t.coefficient = -t.coefficient;
    return z;
  }
  friend Exact operator-(const Exact &x, const Exact &y) { return x + (-y); }

  friend Exact operator*(const Exact &x, const Exact &y) {
    if (x.is_zero_constant() || y.is_zero_constant())
      return Exact();
    if (!x.terms_.empty() && !y.terms_.empty())
      throw NotExact("a product of two symbolic values");
    Exact z;
    z.r_ = x.r_ * y.r_;
    z.deg_ = {detail::add_degrees(x.deg_.num, y.deg_.num),
              detail::add_degrees(x.deg_.den, y.deg_.den)};
    const Exact &symbolic = x.terms_.empty() ? y : x, &factor = x.terms_.empty() ? x : y;
    z.terms_ = scaled(symbolic.terms_, factor.r_);
    z.terms_constant_ = symbolic.terms_constant_ && factor.deg_ == Degree{};
    return z;
  }

  friend Exact operator/(const Exact &x, const Exact &y) {
    if (!y.terms_.empty())
      throw NotExact("division by a symbolic value");
    if (y.r_ == 0)
      throw Pole("division by zero");
    Exact z;
    z.r_ = x.r_ / y.r_;
    z.deg_ = {detail::add_degrees(x.deg_.num, y.deg_.den),
              detail::add_degrees(x.deg_.den, y.deg_.num)};
    z.terms_ = scaled(x.terms_, Rational(1 / y.r_));
    z.terms_constant_ = x.terms_constant_ && y.deg_ == Degree{};
    return z;
  }

  Exact &operator+=(const Exact &y) { return *this = *this + y; }
  Exact &operator-=(const Exact &y) { return *this = *this - y; }
  Exact &operator*=(const Exact &y) { return *this = *this * y; }
  Exact &operator/=(const Exact &y) { return *this = *this / y; }

  friend bool operator==(const Exact &x, const Exact &y) {
    return x.r_ == y.r_ && x.terms_ == y.terms_;
  }
  friend bool operator!=(const Exact &x, const Exact &y) { return !(x == y); }
  friend bool operator<(const Exact &x, const Exact &y) { return compare(x, y) < 0; }
  friend bool operator>(const Exact &x, const Exact &y) { return compare(x, y) > 0; }
  friend bool operator<=(const Exact &x, const Exact &y) { return compare(x, y) <= 0; }
  friend bool operator>=(const Exact &x, const Exact &y) { return compare(x, y) >= 0; }

  /// exp(sum n_j ell_j) = prod alpha_j^{n_j} for integers n_j; anything else is not exact.
  friend Exact exp(const Exact &x) {
    x.require_integer_combination(Symbol::Kind::log_gate, "exp");
    Exact z(1);
    for (const Term &t : x.terms_) {
      const long n = integer_of(t.coefficient);
      z.r_ *= power(symbol_table()[t.symbol].alpha, n);
      (n > 0 ? z.deg_.num : z.deg_.den) += std::abs(n);
    }
    return z;
  }

  /// cos and sin of sum n_j theta_j: the parts of prod (cos_j + i sin_j)^{n_j}.
  friend Exact cos(const Exact &x) { return rotation_of(x, "cos").first; }
  friend Exact sin(const Exact &x) { return rotation_of(x, "sin").second; }

  friend Exact log(const Exact &x) {
    if (x == Exact(1))
      return Exact();
    throw NotExact("log of a value other than 1");
  }
  friend Exact sqrt(const Exact &x) {
    using boost::multiprecision::denominator;
    using boost::multiprecision::numerator;
    if (x.terms_.empty() && x.deg_ == Degree{} && x.r_ >= 0) {
      const auto n = numerator(x.r_), d = denominator(x.r_);
      const auto rn = boost::multiprecision::sqrt(n), rd = boost::multiprecision::sqrt(d);
      if (rn * rn == n && rd * rd == d)
        return Exact(Rational(rn, rd));
    }
    throw NotExact("square root of a value that is not a square");
  }
  friend Exact abs(const Exact &x) { return x < Exact() ? -x : x; }

private:
  Rational r_{0};
  Degree deg_{};
  std::vector<Term> terms_;
  bool terms_constant_ = true; ///< the symbol coefficients do not depend on a drawn input

  static Exact from_symbol(Symbol s) {
    std::vector<Symbol> &table = symbol_table();
    table.push_back(std::move(s));
    Exact e;
    e.terms_ = {{static_cast<int>(table.size()) - 1, Rational(1)}};
    return e;
  }

  bool is_zero_constant() const { return r_ == 0 && terms_.empty() && deg_ == Degree{}; }

  static Degree sum_degree(const Exact &x, const Exact &y) {
    using detail::add_degrees;
    if (x.is_zero_constant())
      return y.deg_;
    if (y.is_zero_constant())
      return x.deg_;
    if (x.deg_.den == 0 && y.deg_.den == 0)
      return {std::max(x.deg_.num, y.deg_.num), 0};
    return {std::max(add_degrees(x.deg_.num, y.deg_.den), add_degrees(y.deg_.num, x.deg_.den)),
            add_degrees(x.deg_.den, y.deg_.den)};
  }

  static std::vector<Term> merge(const std::vector<Term> &a, const std::vector<Term> &b, int sign) {
    std::vector<Term> out;
    std::size_t i = 0, j = 0;
    while (i < a.size() || j < b.size()) {
      if (j == b.size() || (i < a.size() && a[i].symbol < b[j].symbol))
        out.push_back(a[i++]);
      else if (i == a.size() || b[j].symbol < a[i].symbol)
        out.push_back({b[j].symbol, sign * b[j].coefficient}), ++j;
      else {
        Rational c = a[i].coefficient + sign * b[j].coefficient;
        if (c != 0)
          out.push_back({a[i].symbol, c});
        ++i, ++j;
      }
    }
    return out;
  }

  static std::vector<Term> scaled(std::vector<Term> terms, const Rational &factor) {
    if (factor == 0)
      return {};
    for (Term &t : terms)
      t.coefficient *= factor;
    return terms;
  }

  static int compare(const Exact &x, const Exact &y) {
    if (x.terms_.empty() && y.terms_.empty())
      return x.r_ < y.r_ ? -1 : (x.r_ > y.r_ ? 1 : 0);
    if (x == y)
      return 0;
    const Numeric d = x.numeric() - y.numeric();
    if (abs(d) < Numeric(1e-80))
      throw NotExact("two symbolic values too close to order");
    return d < 0 ? -1 : 1;
  }

  static long integer_of(const Rational &c) {
    using boost::multiprecision::denominator;
    if (denominator(c) != 1 || abs(c) > 1000000)
      throw NotExact("a symbol with a coefficient that is not a small integer");
    return static_cast<long>(boost::multiprecision::numerator(c));
  }

  static Rational power(const Rational &base, long n) {
    Rational z(1), b = n < 0 ? Rational(1 / base) : base;
    for (long m = std::abs(n); m > 0; m >>= 1, b *= b)
      if (m & 1)
        z *= b;
    return z;
  }

  void require_integer_combination(Symbol::Kind kind, const char *what) const {
    if (r_ != 0 || !terms_constant_)
      throw NotExact(std::string(what) + " of a value that is not a combination of symbols");
    for (const Term &t : terms_)
      if (symbol_table().at(t.symbol).kind != kind)
        throw NotExact(std::string(what) + " of the wrong kind of symbol");
  }

  static std::pair<Exact, Exact> rotation_of(const Exact &x, const char *what) {
    x.require_integer_combination(Symbol::Kind::angle, what);
    Rational c(1), s(0);
    long long degree = 0;
    for (const Term &t : x.terms_) {
      const Symbol &sym = symbol_table()[t.symbol];
      const long n = integer_of(t.coefficient);
      const Rational sign = n < 0 ? Rational(-1) : Rational(1);
      for (long m = 0; m < std::abs(n); ++m) { // (c + i s)(cos + i sign sin)
        const Rational c2 = c * sym.cos - s * sign * sym.sin;
        s = c * sign * sym.sin + s * sym.cos;
        c = c2;
      }
      degree += 2 * std::abs(n);
    }
    Exact ec(c), es(s);
    ec.deg_ = es.deg_ = {degree, degree};
    return {ec, es};
  }
};

} // namespace ruleproof::proofs

namespace ruleproof {
template <> struct scalar_traits<proofs::Exact> {
  static std::string name() { return "exact"; }
  static proofs::Exact epsilon() { return proofs::Exact(); }
  static int digits10() { return 1000000; }
  static proofs::Exact quiet_NaN() { throw proofs::NotExact("NaN"); }
  static proofs::Exact infinity() { throw proofs::NotExact("infinity"); }
  static proofs::Exact max_exponent_e() { return proofs::Exact(1000000000); }
  static constexpr bool is_exact = true;
  static proofs::Exact from_double(double x) { return proofs::Exact(proofs::Rational(x)); }
  static double to_double(const proofs::Exact &x) { return x.numeric().convert_to<double>(); }
  static bool isfinite(const proofs::Exact &) { return true; }
};
} // namespace ruleproof

namespace Eigen {
template <>
struct NumTraits<ruleproof::proofs::Exact> : GenericNumTraits<ruleproof::proofs::Exact> {
  using Real = ruleproof::proofs::Exact;
  using NonInteger = ruleproof::proofs::Exact;
  using Nested = ruleproof::proofs::Exact;
  using Literal = ruleproof::proofs::Exact;
  enum {
    IsComplex = 0,
    IsInteger = 0,
    IsSigned = 1,
    RequireInitialization = 1,
    ReadCost = 4,
    AddCost = 16,
    MulCost = 32
  };
  static Real epsilon() { return Real(); }
  static Real dummy_precision() { return Real(); }
  static Real highest() { return Real(1000000000); }
  static Real lowest() { return Real(-1000000000); }
  static int digits10() { return 1000000; }
};
} // namespace Eigen
