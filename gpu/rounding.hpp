// ruleproof: the 16-bit storage formats of the GPU kernels, on the CPU. Plain C++ (no Eigen,
// no CUDA): the host API converts its uploads with these, and the emulated twin (twin.hpp)
// rounds with them where the kernels store 16 bits.
//
// Both roundings are IEEE round-to-nearest, ties to even, as the kernels' conversions
// (__float2bfloat16_rn, __float2half_rn): bf16 keeps float's exponent range and 8
// significand bits (unit roundoff 2^-8); fp16 (IEEE binary16) has 11 significand bits (unit
// roundoff 2^-11), subnormals below 2^-14 and overflows to infinity at 65520.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

namespace ruleproof::gpu {

/// \brief The element types of the kernels' device buffers.
enum class DType { bf16, fp16, fp32, i32 };

inline std::string dtype_name(DType t) {
  switch (t) {
  case DType::bf16: return "bf16";
  case DType::fp16: return "fp16";
  case DType::fp32: return "fp32";
  case DType::i32: return "i32";
  }
  return "?";
}

inline std::size_t dtype_size(DType t) { return t == DType::bf16 || t == DType::fp16 ? 2 : 4; }

/// \brief The unit roundoff u of a floating-point format (half the machine epsilon): a
/// rounding to it changes x by at most u |x| (normal range).
inline double unit_roundoff(DType t) {
  switch (t) {
  case DType::bf16: return std::ldexp(1.0, -8);
  case DType::fp16: return std::ldexp(1.0, -11);
  case DType::fp32: return std::ldexp(1.0, -24);
  case DType::i32: return 0;
  }
  return 0;
}

/// \brief The bf16 bit pattern nearest to x (ties to even); NaN stays a quiet NaN.
inline std::uint16_t bf16_bits(float x) {
  std::uint32_t u = std::bit_cast<std::uint32_t>(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) // NaN: keep the sign, force a quiet NaN
    return static_cast<std::uint16_t>((u >> 16) | 0x0040u);
  u += 0x7fffu + ((u >> 16) & 1u); // round to nearest, ties to even (carries into the exponent)
  return static_cast<std::uint16_t>(u >> 16);
}

inline float bf16_value(std::uint16_t bits) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

/// \brief The fp16 (binary16) bit pattern nearest to x (ties to even, subnormals, overflow
/// to infinity); NaN stays a quiet NaN.
inline std::uint16_t fp16_bits(float x) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(x);
  const std::uint16_t sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
  const float a = std::fabs(x);
  if (std::isnan(x))
    return static_cast<std::uint16_t>(sign | 0x7e00u);
  if (a >= 65520.0f) // half-way between 65504 and 2^16 rounds up: infinity
    return static_cast<std::uint16_t>(sign | 0x7c00u);
  if (a < std::ldexp(1.0f, -14)) { // subnormal range: multiples of 2^-24, exact scaling
    const float m = std::nearbyint(a * std::ldexp(1.0f, 24)); // ties to even (default mode)
    return static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(m)); // 1024 is 2^-14
  }
  int e = 0;
  std::frexp(a, &e);                                        // a = f 2^e, f in [0.5, 1)
  const float quantum = std::ldexp(1.0f, e - 11);           // 11 significand bits
  const float r = std::nearbyint(a / quantum) * quantum;    // exact division by a power of 2
  const std::uint32_t ru = std::bit_cast<std::uint32_t>(r); // r is normal in float
  const int exponent = static_cast<int>((ru >> 23) & 0xffu) - 127 + 15;
  const std::uint32_t fraction = (ru >> 13) & 0x3ffu;
  if (exponent >= 31)
    return static_cast<std::uint16_t>(sign | 0x7c00u);
  return static_cast<std::uint16_t>(sign | (exponent << 10) | fraction);
}

inline float fp16_value(std::uint16_t bits) {
  const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
  const int exponent = (bits >> 10) & 0x1f;
  const std::uint32_t fraction = bits & 0x3ffu;
  float magnitude;
  if (exponent == 0)
    magnitude = std::ldexp(static_cast<float>(fraction), -24);
  else if (exponent == 31)
    magnitude =
        fraction ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  else
    magnitude = std::ldexp(static_cast<float>(fraction | 0x400u), exponent - 25);
  return std::bit_cast<float>(std::bit_cast<std::uint32_t>(magnitude) | sign);
}

/// \brief x rounded to the storage format t and read back as float (fp32, i32: unchanged).
inline float round_to(DType t, float x) {
  switch (t) {
  case DType::bf16: return bf16_value(bf16_bits(x));
  case DType::fp16: return fp16_value(fp16_bits(x));
  default: return x;
  }
}

} // namespace ruleproof::gpu
