// ruleproof: the symmetric power embedding phi^p and its redundant twin, the tensor power.
// Seed 004, section 2.1: phi^p : R^d -> R^D with phi^p(x)^T phi^p(y) = (x^T y)^p,
// D = C(d + p - 1, p). Sizes are checked before anything is allocated: D grows fast
// (d = 64, p = 4 gives D = 766,480) and a request that would not fit says what it costs.
#pragma once

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "../core/inputs.hpp"

namespace ruleproof::sympow {

/// Default cap on what one sympow object (a state, an embedding, Sym^p(P)) may allocate.
inline constexpr std::size_t default_max_bytes = std::size_t{1} << 30;

namespace detail {

/// A byte count for people: "6,131,840 bytes (5.85 MiB)".
inline std::string bytes_string(long double bytes) {
  std::ostringstream digits;
  digits.precision(0);
  digits << std::fixed << bytes;
  std::string raw = digits.str(), grouped;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (i > 0 && (raw.size() - i) % 3 == 0)
      grouped += ',';
    grouped += raw[i];
  }
  const char *unit[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  long double v = bytes;
  int u = 0;
  while (v >= 1024 && u < 6)
    v /= 1024, ++u;
  std::ostringstream human;
  human.precision(3);
  human << v << ' ' << unit[u];
  return grouped + " bytes (" + human.str() + ")";
}

/// \brief Throws InputError naming `input` when `elements` values of `element_bytes` bytes
/// each (what: what they are) exceed `max_bytes`; the message gives the cost.
inline void require_memory(const std::string &input, const std::string &what, long double elements,
                           std::size_t element_bytes, std::size_t max_bytes) {
  const long double bytes = elements * static_cast<long double>(element_bytes);
  if (bytes > static_cast<long double>(max_bytes))
    throw InputError(input, what + " would need " + bytes_string(bytes) + ", over the limit of " +
                                bytes_string(static_cast<long double>(max_bytes)) +
                                " (SympowOptions::max_bytes)");
}

} // namespace detail

/// \brief \f$ \binom{n}{k} \f$ in floating point, exact while it is below 2^64.
inline long double binomial(std::uint64_t n, std::uint64_t k) {
  if (k > n)
    return 0;
  k = std::min(k, n - k);
  long double c = 1;
  for (std::uint64_t i = 1; i <= k; ++i)
    c = c * static_cast<long double>(n - k + i) / static_cast<long double>(i);
  return c;
}

/// \brief \f$ D = \binom{d + p - 1}{p} \f$, the number of multisets of p indices from d:
/// the dimension of \f$ \phi^p \f$ (seed 004, section 2.1).
inline long double embedding_dim(std::size_t d, int p) {
  return binomial(d + static_cast<std::uint64_t>(p) - 1, static_cast<std::uint64_t>(p));
}

/// \brief The coordinates of \f$ \phi^p \f$ on \f$ \mathbb{R}^d \f$.
///
/// Coordinate r is the multiset \f$ \{a_1 \le a_2 \le \dots \le a_p\} \f$ stored at
/// `index[r * p .. r * p + p)`; the multisets are in lexicographic order of these sorted
/// tuples (d = 3, p = 2: 00, 01, 02, 11, 12, 22). `multinomial[r]` is
/// \f$ p! / \prod_j m_j! \f$, \f$ m_j \f$ the number of times index j occurs: the number of
/// index tuples of the tensor power that the coordinate stands for.
struct Basis {
  std::size_t d = 0;
  int p = 0;
  std::vector<std::uint16_t> index;
  std::vector<std::uint64_t> multinomial;
  std::size_t size() const { return multinomial.size(); }
  /// The sorted index tuple of coordinate r.
  const std::uint16_t *multiset(std::size_t r) const { return index.data() + r * p; }
};

/// \brief Enumerates the multisets of p indices from {0, ..., d-1} in lexicographic order.
/// Throws InputError when the basis (D x p indices and D counts) exceeds `max_bytes`.
inline Basis basis(std::size_t d, int p, std::size_t max_bytes = default_max_bytes) {
  if (p < 1)
    throw InputError("p", "must be at least 1, got " + std::to_string(p));
  if (d == 0)
    throw InputError("q", "feature dimension d is 0");
  if (d > 65535)
    throw InputError("q", "feature dimension d = " + std::to_string(d) + " is over 65535");
  const long double D = embedding_dim(d, p);
  detail::require_memory("p",
                         "the basis of phi^" + std::to_string(p) + " on R^" + std::to_string(d) +
                             " (D = C(d+p-1, p) multisets)",
                         D, p * sizeof(std::uint16_t) + sizeof(std::uint64_t), max_bytes);
  Basis b;
  b.d = d;
  b.p = p;
  b.index.reserve(static_cast<std::size_t>(D) * p);
  b.multinomial.reserve(static_cast<std::size_t>(D));
  std::uint64_t p_factorial = 1;
  for (int i = 2; i <= p; ++i)
    p_factorial *= static_cast<std::uint64_t>(i);
  std::vector<std::uint16_t> a(p, 0);
  for (;;) {
    b.index.insert(b.index.end(), a.begin(), a.end());
    std::uint64_t run_factorials = 1; // prod_j m_j!
    for (int i = 0, run = 0; i < p; ++i) {
      run = (i > 0 && a[i] == a[i - 1]) ? run + 1 : 1;
      run_factorials *= static_cast<std::uint64_t>(run);
    }
    b.multinomial.push_back(p_factorial / run_factorials);
    int r = p - 1; // rightmost position that can still grow
    while (r >= 0 && a[r] == d - 1)
      --r;
    if (r < 0)
      break;
    ++a[r];
    for (int i = r + 1; i < p; ++i)
      a[i] = a[r];
  }
  return b;
}

/// \brief \f$ \sqrt{p! / \prod_j m_j!} \f$ for every coordinate, in S: the weights that make
/// \f$ \phi^p(x)^\top \phi^p(y) = (x^\top y)^p \f$.
template <class S> Vec<S> sqrt_multinomials(const Basis &b) {
  using std::sqrt;
  Vec<S> w(static_cast<Eigen::Index>(b.size()));
  for (std::size_t r = 0; r < b.size(); ++r)
    w(static_cast<Eigen::Index>(r)) = sqrt(from_double<S>(static_cast<double>(b.multinomial[r])));
  return w;
}

/// \brief \f$ \phi^p(x)_r = \sqrt{p! / \prod_j m_j!}\; x_{a_1} x_{a_2} \cdots x_{a_p} \f$,
/// r the multiset \f$ \{a_1, \dots, a_p\} \f$ (seed 004, section 2.1).
/// x: d; w: sqrt_multinomials(b); returns D.
template <class S> Vec<S> phi(const Basis &b, const Vec<S> &w, const Vec<S> &x) {
  const Eigen::Index D = static_cast<Eigen::Index>(b.size());
  Vec<S> y(D);
  for (Eigen::Index r = 0; r < D; ++r) {
    const std::uint16_t *a = b.multiset(static_cast<std::size_t>(r));
    S prod = w(r);
    for (int i = 0; i < b.p; ++i)
      prod *= x(a[i]);
    y(r) = prod;
  }
  return y;
}

/// \brief \f$ \phi^p(x) \f$ for one vector (builds the basis; for many vectors keep it).
template <class S> Vec<S> phi(const Vec<S> &x, int p, std::size_t max_bytes = default_max_bytes) {
  const Basis b = basis(static_cast<std::size_t>(x.size()), p, max_bytes);
  detail::require_memory("p", "phi^" + std::to_string(p) + "(x)",
                         static_cast<long double>(b.size()), sizeof(S), max_bytes);
  return phi(b, sqrt_multinomials<S>(b), x);
}

/// \brief The full tensor power \f$ x^{\otimes p} \f$, the redundant twin of \f$ \phi^p \f$:
/// entry \f$ (i_1, \dots, i_p) \f$, row-major (i_1 slowest), is \f$ x_{i_1} \cdots x_{i_p} \f$,
/// so \f$ (x^{\otimes p})^\top y^{\otimes p} = (x^\top y)^p \f$. x: d; returns d^p.
template <class S>
Vec<S> tensor_power(const Vec<S> &x, int p, std::size_t max_bytes = default_max_bytes) {
  if (p < 1)
    throw InputError("p", "must be at least 1, got " + std::to_string(p));
  long double n = 1;
  for (int i = 0; i < p; ++i)
    n *= static_cast<long double>(x.size());
  detail::require_memory("p", "the tensor power x^(x)" + std::to_string(p) + " (d^p entries)", n,
                         sizeof(S), max_bytes);
  Vec<S> y = x;
  for (int i = 1; i < p; ++i) {
    Vec<S> next(y.size() * x.size());
    for (Eigen::Index a = 0; a < y.size(); ++a)
      for (Eigen::Index c = 0; c < x.size(); ++c)
        next(a * x.size() + c) = y(a) * x(c);
    y = std::move(next);
  }
  return y;
}

} // namespace ruleproof::sympow
