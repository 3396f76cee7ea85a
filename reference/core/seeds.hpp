// ruleproof: the two hashes every seeded draw of the toolkit is made from.
#pragma once

#include <cstdint>
#include <string>

namespace ruleproof {

/// splitmix64: one well-mixed 64-bit number from another.
inline std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// FNV-1a of a string: a stable seed from a name.
inline std::uint64_t hash_of(const std::string &s) {
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char ch : s)
    h = (h ^ ch) * 1099511628211ULL;
  return h;
}

} // namespace ruleproof
