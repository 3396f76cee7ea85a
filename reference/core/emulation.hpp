// ruleproof: a kernel's roundings, emulated by the reference's float forms (the emulated twin,
// gpu/twin.hpp, runs them with S = float).
//
// A tensor-core kernel rounds the two operands of every matrix product to 16 bits (bf16 or fp16)
// or to tf32 and sums their products in fp32; it stores some intermediates between its stages in
// 16 bits (the scores, the WY factors, the per-chunk states, v_new); its gates, exponentials,
// elementwise products and running sums stay fp32. The chunk forms mark both roundings:
// shared::product rounds its factors (operand), and each stage rounds what the kernels
// store (stored). Both do nothing unless S is float and a Scope has asked for fewer significand
// bits than fp32's 24 in the calling thread (detail::parallel_for hands the setting on to its
// workers), so the truth (double, float128, MPFR) and a plain fp32 twin are untouched.
//
// A value is rounded to `bits` significand bits with fp32's exponent range, to nearest, ties to
// even: 8 bits is bf16 exactly; 11 bits is tf32, and fp16's precision without its narrow range
// (a kernel keeps fp16 operands in range by scaling them, with a reference row, for instance,
// which leaves their relative rounding as it is).
#pragma once

#include <bit>
#include <cstdint>
#include <type_traits>

#include "scalar.hpp"

namespace ruleproof::emulation {

/// \brief Significand bits of what an emulated kernel rounds (24: fp32, nothing rounded).
struct Roundings {
  int operand_bits = 24; ///< each factor of a matrix product
  int stored_bits = 24;  ///< intermediates stored between stages
  bool operator==(const Roundings &) const = default;
};

/// The roundings in force in this thread (plain fp32 unless a Scope says otherwise).
inline Roundings &active() {
  thread_local Roundings r;
  return r;
}

/// \brief Sets the roundings of this thread for its lifetime, then restores the previous ones.
class Scope {
public:
  explicit Scope(Roundings r) : saved_(active()) { active() = r; }
  ~Scope() { active() = saved_; }
  Scope(const Scope &) = delete;
  Scope &operator=(const Scope &) = delete;

private:
  Roundings saved_;
};

/// \brief x rounded to `bits` significand bits (1 to 24), fp32's exponent range, ties to even;
/// NaN and infinities unchanged, an overflow of the rounding to infinity.
inline float round_significand(float x, int bits) {
  if (bits >= 24)
    return x;
  std::uint32_t u = std::bit_cast<std::uint32_t>(x);
  if ((u & 0x7f800000u) == 0x7f800000u) // NaN or infinity
    return x;
  const int drop = 24 - bits;
  const std::uint32_t half = (std::uint32_t(1) << (drop - 1)) - 1;
  u += half + ((u >> drop) & 1u); // to nearest, ties to even; a carry moves the exponent
  u &= ~((std::uint32_t(1) << drop) - 1);
  return std::bit_cast<float>(u);
}

/// Every entry of m rounded to `bits` significand bits (float only).
template <class M> void round_entries(M &m, int bits) {
  for (Eigen::Index j = 0; j < m.cols(); ++j)
    for (Eigen::Index i = 0; i < m.rows(); ++i)
      m(i, j) = round_significand(m(i, j), bits);
}

/// Whether scalar S emulates roundings at all (only float does).
template <class S> inline constexpr bool emulates = std::is_same_v<S, float>;

/// \brief One factor of one term of a product as the emulated kernel's matrix unit reads it.
template <class S> S operand_entry(const S &x) {
  if constexpr (emulates<S>)
    if (active().operand_bits < 24)
      return round_significand(x, active().operand_bits);
  return x;
}

/// \brief A factor of a matrix product as the emulated kernel's matrix unit reads it.
template <class S> Mat<S> operand(Mat<S> m) {
  if constexpr (emulates<S>)
    if (active().operand_bits < 24)
      round_entries(m, active().operand_bits);
  return m;
}

/// \brief An intermediate as the emulated kernel stores it between stages (in place).
template <class S, class M> void store(M &&m) {
  if constexpr (emulates<S>)
    if (active().stored_bits < 24)
      round_entries(m, active().stored_bits);
}

/// \brief A copy of an intermediate as the emulated kernel stores it (for the states a
/// kernel writes out while its running copy stays fp32).
template <class S> Mat<S> stored(Mat<S> m) {
  store<S>(m);
  return m;
}

} // namespace ruleproof::emulation
