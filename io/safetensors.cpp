// ruleproof: safetensors reading and writing (see safetensors.hpp).
#include "safetensors.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <fstream>
#include <limits>

#include <nlohmann/json.hpp>

#include "io/json.hpp"
#include "reporting/atomic_write.hpp"

namespace ruleproof::io {

std::string to_string(DType t) {
  switch (t) {
  case DType::bf16: return "BF16";
  case DType::f16: return "F16";
  case DType::f32: return "F32";
  case DType::i64: return "I64";
  }
  return "?";
}

std::size_t size_of(DType t) { return t == DType::i64 ? 8 : t == DType::f32 ? 4 : 2; }

namespace {

/// The f16 value of bits h: subnormal m 2^-24, normal (1024 + m) 2^(e - 25).
double half_value(std::uint32_t h) {
  const std::uint32_t e = (h >> 10) & 0x1F, m = h & 0x3FF;
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  if (e == 0x1F)
    return m ? std::numeric_limits<double>::quiet_NaN()
             : sign * std::numeric_limits<double>::infinity();
  if (e == 0)
    return sign * std::ldexp(double(m), -24);
  return sign * std::ldexp(double(1024 + m), int(e) - 25);
}

/// x rounded to float with round-to-odd (toward zero, then the last bit set if inexact), so
/// that rounding it again to a narrower type to nearest even is the correct rounding of x.
float round_to_odd_float(double x) {
  float f = static_cast<float>(x);
  if (std::isinf(f) && std::isfinite(x))
    return f; // beyond float's range: the narrower types overflow too
  if (std::abs(double(f)) > std::abs(x))
    f = std::nextafter(f, 0.0f);
  if (double(f) != x)
    f = std::bit_cast<float>(std::bit_cast<std::uint32_t>(f) | 1u);
  return f;
}

std::uint32_t float_to_bf16(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  if (std::isnan(f))
    return (x >> 16) | 0x40;                   // a quiet NaN
  return (x + 0x7FFF + ((x >> 16) & 1)) >> 16; // to nearest even; overflow carries to inf
}

std::uint32_t float_to_half(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t sign = (x >> 16) & 0x8000, ax = x & 0x7FFFFFFF;
  if (ax >= 0x7F800000) // infinity or NaN
    return sign | (ax > 0x7F800000 ? 0x7E00 : 0x7C00);
  if (ax >= 0x477FF000) // at least 65520, half-way past the largest half: infinity
    return sign | 0x7C00;
  if (ax < 0x38800000) // below 2^-14: a subnormal half, m 2^-24 with m rounded to even
    return sign | static_cast<std::uint32_t>(
                      std::nearbyint(double(std::bit_cast<float>(ax)) * 16777216.0));
  std::uint32_t h = (ax - 0x38000000) >> 13; // exponent rebiased 127 -> 15, 10 bits kept
  const std::uint32_t rest = ax & 0x1FFF;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
    ++h;
  return sign | h;
}

std::uint64_t little_endian_u64(std::string_view b) {
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i)
    n = (n << 8) | static_cast<unsigned char>(b[std::size_t(i)]);
  return n;
}

std::uint64_t little_endian_bits(const char *p, std::size_t bytes) {
  std::uint64_t x = 0;
  for (std::size_t i = bytes; i-- > 0;)
    x = (x << 8) | static_cast<unsigned char>(p[i]);
  return x;
}

DType dtype_of(const std::string &s, const std::string &where) {
  if (s == "BF16")
    return DType::bf16;
  if (s == "F16")
    return DType::f16;
  if (s == "F32")
    return DType::f32;
  if (s == "I64")
    return DType::i64;
  throw FileError(where + " has dtype " + s + "; accepted: BF16, F16, F32, I64");
}

/// An unsigned integer of the header, or a FileError saying what was expected.
std::uint64_t unsigned_of(const nlohmann::json &x, const std::string &where) {
  if (!x.is_number_unsigned() && !(x.is_number_integer() && x.get<std::int64_t>() >= 0))
    throw FileError(where + " must be a non-negative integer");
  return x.get<std::uint64_t>();
}

struct Span {
  std::uint64_t begin, end;
  std::string name;
};

} // namespace

double decode(DType t, std::uint64_t bits) {
  const auto low = static_cast<std::uint32_t>(bits);
  switch (t) {
  case DType::bf16: return std::bit_cast<float>(low << 16);
  case DType::f16: return half_value(low);
  case DType::f32: return std::bit_cast<float>(low);
  case DType::i64: return static_cast<double>(std::bit_cast<std::int64_t>(bits));
  }
  return 0;
}

std::uint64_t encode(DType t, double x) {
  if (t == DType::i64)
    return std::bit_cast<std::uint64_t>(static_cast<std::int64_t>(std::llround(x)));
  if (t == DType::f32)
    return std::bit_cast<std::uint32_t>(static_cast<float>(x));
  const float odd = round_to_odd_float(x);
  return t == DType::bf16 ? float_to_bf16(odd) : float_to_half(odd);
}

Safetensors parse_safetensors(std::string_view bytes, const std::string &name) {
  if (bytes.size() < 8)
    throw FileError(name + ": " + std::to_string(bytes.size()) +
                    " bytes, too short for a safetensors file (8 bytes of header length first)");
  const std::uint64_t n = little_endian_u64(bytes);
  if (n > max_header_bytes)
    throw FileError(name + ": the header claims " + std::to_string(n) + " bytes, more than the " +
                    std::to_string(max_header_bytes) + " read");
  if (n > bytes.size() - 8)
    throw FileError(name + ": truncated: the header claims " + std::to_string(n) +
                    " bytes, the file has " + std::to_string(bytes.size() - 8) +
                    " after the length");
  const ParsedJson parsed = parse_json(bytes.substr(8, n));
  const nlohmann::json &header = parsed.value;
  if (!parsed.error.empty() || !header.is_object())
    throw FileError(name + ": the header is not a JSON object" +
                    (parsed.error.empty() ? "" : " (" + parsed.error + ")"));
  const std::string_view data = bytes.substr(8 + n);
  Safetensors file;
  std::vector<Span> spans;
  for (const auto &[key, entry] : header.items()) {
    const std::string where = name + ": tensor '" + key + "'";
    if (key == "__metadata__") {
      if (!entry.is_object())
        throw FileError(name + ": __metadata__ must be an object of strings");
      for (const auto &[k, v] : entry.items()) {
        if (!v.is_string())
          throw FileError(name + ": __metadata__ '" + k + "' is not a string");
        file.metadata[k] = v.get<std::string>();
      }
      continue;
    }
    if (!entry.is_object() || !entry.contains("dtype") || !entry["dtype"].is_string() ||
        !entry.contains("shape") || !entry["shape"].is_array() || !entry.contains("data_offsets") ||
        !entry["data_offsets"].is_array() || entry["data_offsets"].size() != 2)
      throw FileError(where + " needs dtype (a string), shape (an array) and data_offsets "
                              "([begin, end])");
    StoredTensor t;
    t.dtype = dtype_of(entry["dtype"].get<std::string>(), where);
    // The nonzero extents' product is checked too: a zero extent empties the tensor, but the
    // other extents still size what is computed from it.
    std::uint64_t count = 1, nonzero = 1;
    for (const nlohmann::json &d : entry["shape"]) {
      const std::uint64_t extent = unsigned_of(d, where + " shape entry");
      if (extent != 0 && nonzero > std::numeric_limits<std::uint64_t>::max() / extent)
        throw FileError(where + ": the shape's element count overflows");
      nonzero *= extent == 0 ? 1 : extent;
      count *= extent;
      t.shape.push_back(static_cast<std::size_t>(extent));
    }
    const std::uint64_t begin = unsigned_of(entry["data_offsets"][0], where + " data_offsets");
    const std::uint64_t end = unsigned_of(entry["data_offsets"][1], where + " data_offsets");
    if (begin > end || end > data.size())
      throw FileError(where + ": data_offsets [" + std::to_string(begin) + ", " +
                      std::to_string(end) + "] lie outside the " + std::to_string(data.size()) +
                      " bytes of data (truncated file?)");
    const std::uint64_t width = size_of(t.dtype);
    if (count > (end - begin) / width || count * width != end - begin)
      throw FileError(where + ": " + std::to_string(end - begin) + " bytes of data for " +
                      std::to_string(count) + " elements of " + to_string(t.dtype));
    spans.push_back({begin, end, key});
    t.values.resize(static_cast<std::size_t>(count));
    const char *p = data.data() + begin;
    for (std::size_t i = 0; i < t.values.size(); ++i, p += width) {
      t.values[i] = decode(t.dtype, little_endian_bits(p, width));
      if (t.dtype == DType::i64 && std::abs(t.values[i]) > max_exact_integer)
        throw FileError(where + ": element " + std::to_string(i) +
                        " is beyond 2^53, more than an offset needs");
    }
    file.tensors.emplace(key, std::move(t));
  }
  std::sort(spans.begin(), spans.end(),
            [](const Span &a, const Span &b) { return a.begin < b.begin; });
  for (std::size_t i = 1; i < spans.size(); ++i)
    if (spans[i].begin < spans[i - 1].end)
      throw FileError(name + ": tensors '" + spans[i - 1].name + "' and '" + spans[i].name +
                      "' share bytes");
  return file;
}

Safetensors read_safetensors(const std::filesystem::path &path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw FileError(path.string() + ": no such file");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw FileError(path.string() + ": cannot be opened");
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad())
    throw FileError(path.string() + ": reading failed");
  return parse_safetensors(bytes, path.string());
}

std::string safetensors_bytes(const Safetensors &file) {
  nlohmann::json header = nlohmann::json::object();
  if (!file.metadata.empty())
    header["__metadata__"] = file.metadata;
  std::string data;
  for (const auto &[name, t] : file.tensors) {
    std::size_t count = 1;
    for (std::size_t d : t.shape)
      count *= d;
    if (count != t.values.size())
      throw std::invalid_argument("tensor '" + name + "': " + std::to_string(t.values.size()) +
                                  " values for a shape of " + std::to_string(count));
    const std::size_t begin = data.size(), width = size_of(t.dtype);
    for (double x : t.values) {
      const std::uint64_t bits = encode(t.dtype, x);
      for (std::size_t i = 0; i < width; ++i)
        data.push_back(static_cast<char>((bits >> (8 * i)) & 0xFF));
    }
    header[name] = {
        {"dtype", to_string(t.dtype)}, {"shape", t.shape}, {"data_offsets", {begin, data.size()}}};
  }
  const std::string text = header.dump();
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i)
    out[std::size_t(i)] = static_cast<char>((std::uint64_t(text.size()) >> (8 * i)) & 0xFF);
  return out + text + data;
}

void write_safetensors(const std::filesystem::path &path, const Safetensors &file) {
  reports::write_file_atomically(path, safetensors_bytes(file));
}

} // namespace ruleproof::io
