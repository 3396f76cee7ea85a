// ruleproof verify's error profiles (reporting/profile.hpp): where along a sequence the kernels'
// precision, emulated by the twin (gpu/twin.hpp), and the reference's chunkwise form in double
// lose accuracy against the float128 truth, and how that error grows with T.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ruleproof::cli {

/// \brief For each kernel rule named in `rules` (others are skipped): the error profile of o
/// on one drawn case (T not a multiple of the chunk size, two heads) for the twin's fp32
/// arithmetic (gpu/twin.hpp, on inputs stored in bf16) and the chunkwise form in double, and their
/// error growth over T = 64 ... 1024. Deterministic in `seed`. Returns {"profiles": [...],
/// "growth": [...]}, the schema's details entries.
nlohmann::json kernel_error_profiles(const std::vector<std::string> &rules, std::uint64_t seed);

} // namespace ruleproof::cli
