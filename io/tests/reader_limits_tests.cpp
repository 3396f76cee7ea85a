// ruleproof: what every file reader refuses before it costs a crash or a huge allocation:
// nesting deep enough to exhaust the stack (nlohmann::json copies and prints recursively), a
// shape whose extents multiply past any memory (even beside a zero extent), and numbers that
// cannot be converted to the integers they stand for. Each case was a crash, an undefined
// conversion or a wrapped element count before the readers checked it.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include <catch2/catch.hpp>

#include "cli/input_file.hpp"
#include "io/json.hpp"
#include "io/safetensors.hpp"
#include "reporting/result.hpp"

namespace {

using ruleproof::InputError;
using ruleproof::cli::parse_input_file;
using ruleproof::io::FileError;
using ruleproof::io::max_json_depth;
using ruleproof::io::parse_json;
using ruleproof::io::parse_safetensors;
using ruleproof::reports::read_run;

/// An array nested `depth` deep: "[[[]]]" is 3.
std::string nested(std::size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

/// A tensor of the input format with this shape and no data.
std::string tensor(const std::string &shape) { return "{\"shape\": " + shape + ", \"data\": []}"; }

/// An input file whose q, k and v are all `t`, with these options.
std::string input_file(const std::string &t, const std::string &options = "{}") {
  return "{\"q\": " + t + ", \"k\": " + t + ", \"v\": " + t + ", \"options\": " + options + "}";
}

/// A safetensors file of this header and no data.
std::string safetensors_file(const std::string &header) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i)
    out[std::size_t(i)] = static_cast<char>((std::uint64_t(header.size()) >> (8 * i)) & 0xFF);
  return out + header;
}

} // namespace

TEST_CASE("JSON nested deeper than the readers accept is refused while parsing", "[limits]") {
  CHECK(parse_json(nested(std::size_t(max_json_depth))).error.empty());
  const ruleproof::io::ParsedJson deep = parse_json(nested(std::size_t(max_json_depth) + 1));
  CHECK(deep.value.is_null());
  CHECK_THAT(deep.error, Catch::Contains("nested more than"));
  CHECK_FALSE(parse_json("{\"a\": ").error.empty());
}

TEST_CASE("every reader refuses a file nested a million deep, without overflowing the stack",
          "[limits]") {
  const std::string deep = nested(1'000'000);
  CHECK_THROWS_WITH(parse_input_file<double>(input_file(tensor(deep)), "in.json"),
                    Catch::Contains("nested more than"));
  const std::filesystem::path run = "deep_run.json"; // in the test's own build folder
  std::ofstream(run) << "{\"format\": " + deep + "}";
  CHECK_THROWS_WITH(read_run(run), Catch::Contains("nested more than"));
  std::filesystem::remove(run);
  CHECK_THROWS_WITH(parse_safetensors(safetensors_file("{\"q\": " + deep + "}"), "d.safetensors"),
                    Catch::Contains("nested more than"));
}

TEST_CASE("a shape whose extents multiply past memory is refused before allocating", "[limits]") {
  // 2^32 * 2^32 wraps to 0 elements, which the empty data would have matched.
  CHECK_THROWS_WITH(
      parse_input_file<double>(input_file(tensor("[1, 4294967296, 4294967296, 1]")), "in.json"),
      Catch::Contains("more elements than fit in memory"));
  CHECK_THROWS_WITH(
      parse_input_file<double>(input_file(tensor("[0, 4294967296, 4294967296, 1]")), "in.json"),
      Catch::Contains("more elements than fit in memory"));
  CHECK_THROWS_WITH(parse_safetensors(safetensors_file("{\"h0\": {\"dtype\": \"F32\", \"shape\": "
                                                       "[0, 4294967296, 4294967296], "
                                                       "\"data_offsets\": [0, 0]}}"),
                                      "d.safetensors"),
                    Catch::Contains("overflows"));
  // An empty tensor beside extents that fit is legal (an empty sequence).
  CHECK(parse_input_file<double>(input_file(tensor("[1, 0, 1, 4]")), "in.json").in.q.size() == 0);
}

TEST_CASE("cu_seqlens that are not 64-bit integers are refused, not converted", "[limits]") {
  const std::string q = "{\"shape\": [1, 1, 1, 1], \"data\": [1]}";
  for (const char *cu : {"[0, 1e300]", "[0, 0.5]", "[0, 18446744073709551615]", "3"})
    CHECK_THROWS_WITH(parse_input_file<double>(
                          input_file(q, std::string("{\"cu_seqlens\": ") + cu + "}"), "in.json"),
                      Catch::Contains("cu_seqlens"));
  CHECK(parse_input_file<double>(input_file(q, "{\"cu_seqlens\": [0, 1]}"), "in.json")
            .opts.cu_seqlens.size() == 2);
}
