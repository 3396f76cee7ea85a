// ruleproof: the claims engine (see engine.hpp).
#include "engine.hpp"

#include "reference/core/seeds.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <mutex>
#include <thread>

#include <mpfr.h>

namespace ruleproof::proofs {

std::string to_string(Verdict v) {
  switch (v) {
  case Verdict::holds: return "holds";
  case Verdict::fails: return "fails";
  case Verdict::ambiguous: return "ambiguous";
  }
  return "?";
}

std::uint64_t claim_seed(const std::string &id, std::uint64_t seed) {
  return mix(hash_of(id) ^ mix(seed));
}

double schwartz_zippel_bound(long long degree, double set_size, int points) {
  const double ratio = static_cast<double>(degree) / set_size;
  return ratio >= 1 ? 1.0 : std::pow(ratio, points);
}

namespace {

/// The seed of draw i (after `retry` poles) of a claim whose seed is `base`.
std::uint64_t draw_seed(std::uint64_t base, int i, int retry) {
  return mix(base ^ mix(static_cast<std::uint64_t>(i) << 32 | static_cast<std::uint64_t>(retry)));
}

std::string shape_of(Eigen::Index r, Eigen::Index c) {
  return std::to_string(r) + "x" + std::to_string(c);
}

/// \brief What one draw showed.
struct Evaluation {
  bool equal = true;
  double rel_error = 0;
  long long degree = 0;   ///< exact
  double threshold = 0;   ///< mpfr
  std::string note;       ///< shapes that differ
  std::uint64_t seed = 0; ///< the draw's seed, after any poles
};

template <class S> std::optional<std::string> shape_mismatch(const Sides<S> &s) {
  if (s.lhs.rows() == s.rhs.rows() && s.lhs.cols() == s.rhs.cols())
    return std::nullopt;
  return "the sides have shapes " + shape_of(s.lhs.rows(), s.lhs.cols()) + " and " +
         shape_of(s.rhs.rows(), s.rhs.cols());
}

Evaluation evaluate_exact(const Check &check, const Sizes &sizes, std::uint64_t seed) {
  symbol_table().clear();
  Draw<Exact> draw(sizes, seed);
  const Sides<Exact> s = check.exact(draw);
  Evaluation e;
  e.seed = seed;
  if (auto m = shape_mismatch(s)) {
    e.equal = false, e.rel_error = std::numeric_limits<double>::infinity(), e.note = *m;
    return e;
  }
  Numeric diff = 0, size = 0;
  for (Eigen::Index i = 0; i < s.lhs.size(); ++i) {
    const Exact d = s.lhs(i) - s.rhs(i);
    if (!d.is_rational())
      throw NotExact("a side left with a symbol (a log-gate or angle) in it");
    e.degree = std::max(e.degree, d.degree().num);
    if (d.rational() != 0)
      e.equal = false;
    diff = std::max(diff, Numeric(abs(d.numeric())));
    size = std::max({size, Numeric(abs(s.lhs(i).numeric())), Numeric(abs(s.rhs(i).numeric()))});
  }
  if (!e.equal)
    e.rel_error = size > 0 ? (diff / size).convert_to<double>() : 1.0;
  return e;
}

/// MPFR's default precision is one setting of the whole process (Boost 1.74 keeps it in a
/// static, not per thread): an evaluation at a chosen precision holds this lock throughout,
/// or a thread at D digits would make another's values at 2D digits.
std::mutex mpfr_precision;

Mat<mpfr> evaluate_mpfr_side(const Check &check, const Sizes &sizes, std::uint64_t seed,
                             unsigned digits, Mat<mpfr> &rhs) {
  set_mpfr_digits(digits);
  Draw<mpfr> draw(sizes, seed);
  Sides<mpfr> s = check.high_precision(draw);
  rhs = std::move(s.rhs);
  return std::move(s.lhs);
}

/// Both sides at D and 2D digits. tau, the largest change of either side between the two,
/// measures the rounding at D digits; at 2D digits rounding is about tau 10^-D. The sides
/// agree when they differ by less than 1000 times that (plus 1000 ulps of the larger side).
Evaluation evaluate_mpfr(const Check &check, const Sizes &sizes, std::uint64_t seed,
                         unsigned digits) {
  const std::lock_guard<std::mutex> lock(mpfr_precision);
  Mat<mpfr> r_lo, r_hi;
  const Mat<mpfr> l_lo = evaluate_mpfr_side(check, sizes, seed, digits, r_lo);
  const Mat<mpfr> l_hi = evaluate_mpfr_side(check, sizes, seed, 2 * digits, r_hi);
  Evaluation e;
  e.seed = seed;
  if (auto m = shape_mismatch(Sides<mpfr>{l_hi, r_hi})) {
    e.equal = false, e.rel_error = std::numeric_limits<double>::infinity(), e.note = *m;
    return e;
  }
  using std::abs;
  mpfr tau = 0, size = 0, diff = 0;
  for (Eigen::Index i = 0; i < l_hi.size(); ++i) {
    tau = std::max({tau, mpfr(abs(l_lo(i) - l_hi(i))), mpfr(abs(r_lo(i) - r_hi(i)))});
    size = std::max({size, mpfr(abs(l_hi(i))), mpfr(abs(r_hi(i)))});
    diff = std::max(diff, mpfr(abs(l_hi(i) - r_hi(i))));
  }
  const mpfr u_lo = pow(mpfr(10), -static_cast<int>(digits));
  const mpfr allowed = 1000 * (tau * u_lo + u_lo * u_lo * size);
  e.equal = diff <= allowed;
  const mpfr denominator = size > 0 ? size : mpfr(1);
  e.rel_error = (diff / denominator).convert_to<double>();
  e.threshold = (allowed / denominator).convert_to<double>();
  return e;
}

/// One draw of a reading at `sizes`, drawn again (up to 20 times) where a denominator
/// vanishes.
Evaluation evaluate(const Check &check, const Sizes &sizes, std::uint64_t base, int i, bool exact,
                    unsigned digits) {
  for (int retry = 0;; ++retry) {
    const std::uint64_t seed = draw_seed(base, i, retry);
    try {
      return exact ? evaluate_exact(check, sizes, seed) : evaluate_mpfr(check, sizes, seed, digits);
    } catch (const Pole &) {
      if (retry == 20)
        throw;
    }
  }
}

/// The first failing draw among `points` at `sizes`, if any.
std::optional<Evaluation> first_failure(const Check &check, const Sizes &sizes, std::uint64_t base,
                                        int points, bool exact, unsigned digits) {
  for (int i = 0; i < points; ++i) {
    Evaluation e = evaluate(check, sizes, base, i, exact, digits);
    if (!e.equal)
      return e;
  }
  return std::nullopt;
}

/// Greedy shrinking: lower one size at a time, to the smallest value that still fails,
/// until no size can be lowered.
Counterexample shrink(const Check &check, const Claim &c, Sizes sizes, Evaluation failing,
                      std::uint64_t base, int points, bool exact, unsigned digits) {
  std::size_t Sizes::*const dims[] = {&Sizes::T, &Sizes::K, &Sizes::V, &Sizes::C};
  for (bool lowered = true; lowered;) {
    lowered = false;
    for (auto dim : dims)
      for (std::size_t value = c.min_sizes.*dim; value < sizes.*dim && !lowered; ++value) {
        Sizes trial = sizes;
        trial.*dim = value;
        if (auto e = first_failure(check, trial, base, points, exact, digits)) {
          sizes = trial, failing = *e, lowered = true;
        }
      }
  }
  return {sizes, failing.seed, failing.rel_error, failing.note};
}

} // namespace

ReadingResult decide_reading(const Reading &r, const Claim &c, const EngineOptions &o) {
  ReadingResult res;
  res.name = r.name, res.statement = r.statement, res.points = o.points;
  const std::uint64_t base = claim_seed(c.id + "/" + r.name, o.seed);
  bool exact = true;
  std::vector<Evaluation> draws;
  try {
    for (int i = 0; i < o.points; ++i)
      draws.push_back(evaluate(r.check, c.sizes, base, i, true, o.mpfr_digits));
  } catch (const NotExact &e) {
    exact = false, res.why_not_exact = e.what();
    draws.clear();
    for (int i = 0; i < o.points; ++i)
      draws.push_back(evaluate(r.check, c.sizes, base, i, false, o.mpfr_digits));
  }
  res.method = exact ? "exact rational"
                     : "mpfr " + std::to_string(o.mpfr_digits) + " and " +
                           std::to_string(2 * o.mpfr_digits) + " digits";
  const Evaluation *failing = nullptr;
  for (const Evaluation &e : draws) {
    res.max_rel_error = std::max(res.max_rel_error, e.rel_error);
    res.degree = std::max(res.degree, e.degree);
    res.threshold = std::max(res.threshold, e.threshold);
    if (!e.equal && !failing)
      failing = &e;
  }
  if (exact) {
    res.set_size = Draw<Exact>::set_size;
    res.failure_bound = schwartz_zippel_bound(res.degree, res.set_size, o.points);
  }
  if (failing) {
    res.verdict = Verdict::fails;
    res.counterexample =
        shrink(r.check, c, c.sizes, *failing, base, o.points, exact, o.mpfr_digits);
  }
  return res;
}

Verdict verdict_of_readings(const std::vector<ReadingResult> &readings) {
  const auto with = [&](Verdict v) {
    return std::any_of(readings.begin(), readings.end(),
                       [v](const ReadingResult &x) { return x.verdict == v; });
  };
  if (with(Verdict::holds) && with(Verdict::fails))
    return Verdict::ambiguous;
  return with(Verdict::fails) ? Verdict::fails : Verdict::holds;
}

ClaimResult decide(const Claim &c, const EngineOptions &o) {
  ClaimResult res;
  res.claim = &c;
  try {
    for (const Reading &r : c.readings)
      res.readings.push_back(decide_reading(r, c, o));
  } catch (const std::exception &e) {
    res.verdict = Verdict::fails;
    res.problem = std::string("the check could not be evaluated: ") + e.what();
    return res;
  }
  res.verdict = verdict_of_readings(res.readings);
  if (!c.correction_of.empty() && res.verdict != Verdict::holds)
    res.problem = "a correction must hold, and this one " + to_string(res.verdict);
  return res;
}

std::vector<ClaimResult> decide_all(const std::vector<const Claim *> &claims,
                                    const EngineOptions &o, unsigned threads,
                                    const std::function<void(std::size_t, std::size_t)> &progress) {
  std::vector<ClaimResult> results(claims.size());
  std::atomic<std::size_t> next{0}, done{0};
  std::mutex report;
  auto work = [&] {
    for (std::size_t i; (i = next++) < claims.size();) {
      results[i] = decide(*claims[i], o);
      const std::lock_guard<std::mutex> lock(report);
      if (progress)
        progress(++done, claims.size());
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < std::max(1u, threads); ++t)
    pool.emplace_back([&] {
      work();
      // MPFR keeps constants and tables per thread and frees them only when asked: a thread
      // that exits without asking leaks them (LeakSanitizer finds it).
      mpfr_free_cache2(MPFR_FREE_LOCAL_CACHE);
    });
  work();
  for (std::thread &t : pool)
    t.join();
  return results;
}

} // namespace ruleproof::proofs
