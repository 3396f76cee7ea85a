// ruleproof: a claim of a seed note, and the draws its check evaluates both sides on.
//
// A check is one generic function `sides(Draw<S> &)` returning the two sides of the
// equation as matrices; the engine instantiates it for exact numbers (proofs/exact.hpp)
// and for MPFR, and decides which applies (proofs/engine.hpp).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "exact.hpp"
#include "reference/core/dual.hpp"
#include "reference/core/mpfr.hpp"
#include "reference/core/seeds.hpp"

namespace ruleproof::proofs {

/// \brief The sizes a check draws at; shrinking lowers each toward its minimum.
struct Sizes {
  std::size_t T = 6; ///< sequence length
  std::size_t K = 3; ///< key dimension
  std::size_t V = 2; ///< value dimension
  std::size_t C = 3; ///< chunk size
  friend bool operator==(const Sizes &, const Sizes &) = default;
};

/// \brief Where a claim stands in its note.
struct Source {
  std::string file;     ///< the seed note's file name
  std::string section;  ///< its section, as the note titles it
  std::string equation; ///< the equation's number or name in the note, if any
};

/// \brief The inputs of one evaluation: every value drawn from a finite set of `set_size`
/// rationals (the set Schwartz-Zippel's bound counts), the same rationals in every scalar.
///
/// Values v = m / 2^16 for m uniform in [-2^16, 2^16]; gates alpha = m / (2^16 + 1) for m in
/// [1, 2^16], given to the reference as log-gates; rotation parameters t like values.
template <class S> class Draw {
public:
  using Scalar = S;
  static constexpr std::int64_t scale = 1 << 16;
  static constexpr double set_size = static_cast<double>(scale); ///< the smallest set drawn

  Draw(const Sizes &sizes, std::uint64_t seed) : sizes(sizes), state_(seed) {}

  const Sizes sizes;

  /// A variable in [-1, 1].
  S value() { return make(Rational(uniform(2 * scale + 1) - scale, scale)); }
  /// A variable in (0, 1].
  S positive() { return make(Rational(uniform(scale) + 1, scale)); }
  /// A matrix of variables in [-1, 1].
  Mat<S> values(std::size_t rows, std::size_t cols) {
    return fill(rows, cols, [this] { return value(); });
  }
  /// A matrix of variables in (0, 1].
  Mat<S> positives(std::size_t rows, std::size_t cols) {
    return fill(rows, cols, [this] { return positive(); });
  }
  /// log(alpha) for a gate alpha in (0, 1).
  S log_gate() {
    const Rational alpha(uniform(scale) + 1, scale + 1);
    if constexpr (std::is_same_v<S, Exact>)
      return Exact::log_gate(alpha);
    else {
      using std::log;
      return log(to_s(alpha));
    }
  }
  /// A matrix of log-gates.
  Mat<S> log_gates(std::size_t rows, std::size_t cols) {
    return fill(rows, cols, [this] { return log_gate(); });
  }
  /// An angle theta with rational cos and sin: cos = (1 - t^2) / (1 + t^2), t in [-1, 1].
  S angle() {
    const Rational t(uniform(2 * scale + 1) - scale, scale);
    if constexpr (std::is_same_v<S, Exact>)
      return Exact::angle(t);
    else {
      using std::atan2;
      const S c = to_s((1 - t * t) / (1 + t * t)), s = to_s(2 * t / (1 + t * t));
      return atan2(s, c);
    }
  }

private:
  std::uint64_t state_;

  std::int64_t uniform(std::int64_t n) { // [0, n), from the next splitmix64 number
    return static_cast<std::int64_t>(mix(state_++) % static_cast<std::uint64_t>(n));
  }
  static S to_s(const Rational &x) {
    if constexpr (std::is_same_v<S, Exact>)
      return Exact(x);
    else
      return S(x);
  }
  S make(const Rational &x) {
    if constexpr (std::is_same_v<S, Exact>)
      return Exact::variable(x);
    else
      return S(x);
  }
  template <class F> Mat<S> fill(std::size_t rows, std::size_t cols, F next) {
    Mat<S> m(rows, cols);
    for (Eigen::Index i = 0; i < m.rows(); ++i)
      for (Eigen::Index j = 0; j < m.cols(); ++j)
        m(i, j) = next();
    return m;
  }
};

/// The scalar of a draw `d` inside a check's generic lambda: `using S = scalar_of<decltype(d)>;`,
/// the one way every check names it.
template <class D> using scalar_of = typename std::decay_t<D>::Scalar;

/// \brief The two sides of a claim at one draw, as matrices of the same shape (a claim
/// with several parts stacks them).
template <class S> struct Sides { Mat<S> lhs, rhs; };

/// \brief One check of a claim, instantiated for each scalar the engine uses.
struct Check {
  std::function<Sides<Exact>(Draw<Exact> &)> exact;
  std::function<Sides<ruleproof::mpfr>(Draw<ruleproof::mpfr> &)> high_precision;
};

/// Makes a Check from a generic function `f(Draw<S> &) -> Sides<S>`.
template <class F> Check check_of(F f) {
  return {[f](Draw<Exact> &d) { return f(d); }, [f](Draw<mpfr> &d) { return f(d); }};
}

/// \brief One way to read a claim: the formula under that reading and its check.
struct Reading {
  std::string name;      ///< e.g. "gamma as the cumulative log-gate"
  std::string statement; ///< the formula under this reading
  Check check;
};

/// \brief A claim of a seed note: one reading, or several when the note leaves a symbol or
/// index undefined (its verdict is then `ambiguous` where the readings disagree, and
/// otherwise theirs: engine.hpp's `verdict_of_readings`).
struct Claim {
  std::string id;
  Source source;
  std::string quote; ///< a verbatim excerpt of the note (20 to 200 characters)
  /// Which of the places the quote's text appears at the claim is about (1: the first),
  /// where a note restates a block verbatim (seed 001's forward results under the backward
  /// and again without explicit gating).
  int occurrence = 1;
  std::string statement; ///< the formula as written, in plain text
  std::vector<Reading> readings;
  std::string correction_of; ///< the id of the failing claim this one corrects, if any
  bool gradient = false;     ///< compares a gradient formula with the true gradient
  Sizes sizes{};             ///< the sizes it is checked at
  Sizes min_sizes{1, 1, 1, 1};
};

/// \brief A claim with no reading yet: the readings of an ambiguous claim are added to it.
inline Claim claim(std::string id, Source source, std::string quote, std::string statement) {
  Claim c;
  c.id = std::move(id), c.source = std::move(source), c.quote = std::move(quote);
  c.statement = std::move(statement);
  return c;
}

/// \brief A claim with one reading, the formula as written.
inline Claim claim(std::string id, Source source, std::string quote, std::string statement,
                   Check check) {
  Claim c = claim(std::move(id), std::move(source), std::move(quote), statement);
  c.readings.push_back({"as written", std::move(statement), std::move(check)});
  return c;
}

/// \brief A corrected formula registered beside the claim `of` that fails as written: the
/// same source and quote, its own statement and check. The engine requires that it holds.
inline Claim correction(std::string id, const Claim &of, std::string statement, Check check) {
  Claim c = claim(std::move(id), of.source, of.quote, std::move(statement), std::move(check));
  c.correction_of = of.id;
  return c;
}

/// Stacks matrices of equal column count (several parts of a claim in one side).
template <class S> Mat<S> stack(const std::vector<Mat<S>> &parts) {
  Eigen::Index rows = 0, cols = parts.empty() ? 0 : parts.front().cols();
  for (const Mat<S> &p : parts)
    rows += p.rows();
  Mat<S> out(rows, cols);
  Eigen::Index r = 0;
  for (const Mat<S> &p : parts) {
    if (p.cols() != cols)
      throw std::invalid_argument("stack: parts of different widths");
    out.middleRows(r, p.rows()) = p;
    r += p.rows();
  }
  return out;
}

} // namespace ruleproof::proofs
