// ruleproof: reading and writing safetensors files, the tensor dumps PyTorch users write.
//
// The format: 8 bytes, the header's length N as a little-endian unsigned 64-bit integer;
// N bytes of a JSON object mapping each tensor's name to {"dtype", "shape", "data_offsets":
// [begin, end]} (and an optional "__metadata__" object of strings); then the data, each
// tensor's bytes row-major and little-endian at [begin, end) of the data that follows the
// header. ruleproof accepts BF16, F16 and F32 tensors and reads them into doubles (exactly:
// every value of those types is a double), and I64 tensors (offsets such as cu_seqlens) of
// magnitude at most 2^53, which doubles hold exactly too.
//
// Everything read is checked before anything is allocated from it: a truncated file, a
// header that does not parse or claims more bytes than the file has, offsets outside the
// data or overlapping, a byte count that does not match the shape, an unknown dtype, each
// throws FileError naming the file, the tensor and what is wrong.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ruleproof::io {

/// \brief A file that cannot be read as asked: the message names the file and the problem.
class FileError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// The element types a dump may hold.
enum class DType { bf16, f16, f32, i64 };

/// "BF16", "F16", "F32", "I64": the names the format uses.
std::string to_string(DType t);
/// Bytes of one element.
std::size_t size_of(DType t);

/// \brief One tensor of a file: its stored type, its shape, its values row-major.
struct StoredTensor {
  DType dtype = DType::f32;
  std::vector<std::size_t> shape;
  std::vector<double> values;
};

/// \brief A whole file: tensors by name, and the header's "__metadata__" strings.
struct Safetensors {
  std::map<std::string, StoredTensor> tensors;
  std::map<std::string, std::string> metadata;
};

/// The largest header ruleproof reads (the format's own readers refuse more than 100 MB).
inline constexpr std::uint64_t max_header_bytes = 100'000'000;

/// Parses the bytes of a file; `name` is used in error messages. Throws FileError.
Safetensors parse_safetensors(std::string_view bytes, const std::string &name);

/// Reads and parses a file. Throws FileError (missing, unreadable, malformed).
Safetensors read_safetensors(const std::filesystem::path &path);

/// The bytes of a file holding these tensors, each value rounded to its tensor's dtype
/// (round to nearest even), the header's keys in name order.
std::string safetensors_bytes(const Safetensors &file);

/// Writes a file whole or not at all.
void write_safetensors(const std::filesystem::path &path, const Safetensors &file);

/// The value of a bf16, f16, f32 or i64 bit pattern, and a double rounded to one (nearest even;
/// out of range: infinity; i64: to the nearest integer).
double decode(DType t, std::uint64_t bits);
std::uint64_t encode(DType t, double x);

/// The largest magnitude of an I64 value read (doubles hold every integer up to it exactly).
inline constexpr double max_exact_integer = 9007199254740992.0; // 2^53

} // namespace ruleproof::io
