// ruleproof: the safetensors reader and writer: values survive a round trip, rounding to
// bf16 and f16 is to nearest even, and every malformed file is refused with a clear error.
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <random>
#include <string>

#include <catch2/catch.hpp>

#include "io/safetensors.hpp"

using namespace ruleproof::io;

namespace {

/// A file of one tensor per dtype, values representable in each.
Safetensors small_file() {
  Safetensors f;
  f.tensors["q"] = {DType::bf16, {2, 3}, {1.0, -2.0, 0.5, 0.0, 3.0, -0.25}};
  f.tensors["g"] = {DType::f16, {3}, {-0.125, 65504.0, std::ldexp(1.0, -24)}};
  f.tensors["beta"] = {DType::f32, {2}, {0.1f, 0.75}};
  f.tensors["empty"] = {DType::f32, {0, 4}, {}};
  f.metadata["rule"] = "gla";
  return f;
}

/// The header length and header of a file, with its data appended.
std::string file_with_header(const std::string &header, const std::string &data = "") {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i)
    out[std::size_t(i)] = static_cast<char>((std::uint64_t(header.size()) >> (8 * i)) & 0xFF);
  return out + header + data;
}

void refused(const std::string &bytes, const std::string &phrase) {
  INFO("expected a FileError containing: " << phrase);
  try {
    parse_safetensors(bytes, "dump.safetensors");
    FAIL("accepted");
  } catch (const FileError &e) {
    INFO(e.what());
    CHECK(std::string(e.what()).find(phrase) != std::string::npos);
    CHECK(std::string(e.what()).find("dump.safetensors") != std::string::npos);
  }
}

/// The representable neighbours of bits: every value strictly between them is closer to
/// decode(bits) than to either neighbour, or ties and bits is even.
void is_nearest_even(DType t, double x, std::uint32_t bits) {
  const double y = decode(t, bits), err = std::abs(y - x);
  for (const std::uint32_t other : {bits - 1, bits + 1}) {
    const double z = decode(t, other);
    if (!std::isfinite(z) || (std::signbit(z) != std::signbit(y) && z != 0))
      continue;
    INFO(to_string(t) << " x = " << x << " rounded to " << y << ", neighbour " << z);
    CHECK(err <= std::abs(z - x));
    if (err == std::abs(z - x))
      CHECK((bits & 1) == 0);
  }
}

} // namespace

TEST_CASE("safetensors_values_survive_a_round_trip_through_a_file") {
  const Safetensors f = small_file();
  const auto path = std::filesystem::temp_directory_path() / "ruleproof_round_trip.safetensors";
  write_safetensors(path, f);
  const Safetensors g = read_safetensors(path);
  std::filesystem::remove(path);
  REQUIRE(g.tensors.size() == f.tensors.size());
  for (const auto &[name, t] : f.tensors) {
    INFO(name);
    const StoredTensor &u = g.tensors.at(name);
    CHECK(u.dtype == t.dtype);
    CHECK(u.shape == t.shape);
    REQUIRE(u.values.size() == t.values.size());
    for (std::size_t i = 0; i < t.values.size(); ++i)
      CHECK(u.values[i] == decode(t.dtype, encode(t.dtype, t.values[i])));
  }
  CHECK(g.metadata == f.metadata);
  CHECK(g.tensors.at("g").values[1] == 65504.0);
  CHECK(g.tensors.at("beta").values[0] == double(0.1f));
}

TEST_CASE("safetensors_rounding_to_bf16_and_f16_is_to_nearest_even") {
  CHECK(encode(DType::bf16, 1.0) == 0x3F80);
  CHECK(encode(DType::f16, 1.0) == 0x3C00);
  CHECK(encode(DType::f16, 65504.0) == 0x7BFF);
  CHECK(encode(DType::f16, 65519.0) == 0x7BFF);
  CHECK(encode(DType::f16, 65520.0) == 0x7C00); // the tie rounds to even: infinity
  CHECK(encode(DType::f16, std::ldexp(1.0, -24)) == 0x0001);
  CHECK(encode(DType::f16, std::ldexp(1.0, -26)) == 0x0000);
  CHECK(std::isnan(decode(DType::bf16, encode(DType::bf16, std::nan("")))));
  CHECK(std::isnan(decode(DType::f16, encode(DType::f16, std::nan("")))));
  // 1 + 2^-8 lies half-way between two bf16 values; 1 + 2^-8 + 2^-40 lies just above it
  // (a double rounding through float would make it a tie and round down).
  CHECK(encode(DType::bf16, 1.0 + std::ldexp(1.0, -8)) == 0x3F80);
  CHECK(encode(DType::bf16, 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40)) == 0x3F81);
  CHECK(encode(DType::f16, 1.0 + std::ldexp(1.0, -11)) == 0x3C00);     // a tie, to even
  CHECK(encode(DType::f16, 1.0 + 3 * std::ldexp(1.0, -11)) == 0x3C02); // a tie, to even
  std::mt19937_64 rng(20261121);
  std::uniform_real_distribution<double> mantissa(-2.0, 2.0);
  std::uniform_int_distribution<int> exponent(-30, 18);
  std::uniform_int_distribution<int> short_mantissa(-4096, 4096); // ties happen often
  for (int i = 0; i < 20000; ++i) {
    const double x = i % 2 ? std::ldexp(mantissa(rng), exponent(rng))
                           : std::ldexp(double(short_mantissa(rng)), exponent(rng) - 12);
    for (const DType t : {DType::bf16, DType::f16}) {
      const std::uint32_t bits = encode(t, x);
      if (std::isfinite(decode(t, bits)))
        is_nearest_even(t, x, bits);
    }
  }
}

TEST_CASE("safetensors_malformed_files_are_refused_with_a_clear_error") {
  const std::string good = safetensors_bytes(small_file());
  REQUIRE_NOTHROW(parse_safetensors(good, "dump.safetensors"));
  refused("", "too short");
  refused(good.substr(0, 7), "too short");
  refused(good.substr(0, 20), "truncated");
  refused(good.substr(0, good.size() - 1), "outside");
  std::string huge = good;
  huge[7] = '\x7f';
  refused(huge, "more than");
  refused(file_with_header("{not json"), "not a JSON object");
  refused(file_with_header("[1, 2]"), "not a JSON object");
  refused(file_with_header(R"({"q": {"shape": [1], "data_offsets": [0, 4]}})", "abcd"),
          "needs dtype");
  refused(file_with_header(R"({"q": {"dtype": "F64", "shape": [1], "data_offsets": [0, 8]}})",
                           "abcdefgh"),
          "has dtype F64; accepted: BF16, F16, F32");
  refused(
      file_with_header(R"({"q": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})", "abcd"),
      "non-negative integer");
  refused(
      file_with_header(R"({"q": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}})", "abcd"),
      "4 bytes of data for 2 elements");
  refused(
      file_with_header(
          R"({"q": {"dtype": "F32", "shape": [4294967296, 4294967296, 4], "data_offsets": [0, 4]}})",
          "abcd"),
      "overflows");
  refused(
      file_with_header(R"({"q": {"dtype": "F32", "shape": [1], "data_offsets": [4, 0]}})", "abcd"),
      "outside");
  refused(file_with_header(R"({"a": {"dtype": "F16", "shape": [2], "data_offsets": [0, 4]},)"
                           R"( "b": {"dtype": "F16", "shape": [1], "data_offsets": [2, 4]}})",
                           "abcd"),
          "share bytes");
  refused(file_with_header(R"({"__metadata__": {"n": 1}})"), "not a string");
  CHECK_THROWS_AS(read_safetensors("/nonexistent/dump.safetensors"), FileError);
}
