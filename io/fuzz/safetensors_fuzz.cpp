// ruleproof: libFuzzer target of the safetensors reader (io/safetensors.hpp). Any input must
// parse or be refused with a FileError; a file that parses writes back and parses again to
// the same tensors.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "io/safetensors.hpp"

namespace {

/// The reader keeps BF16, F16 and F32 values exactly, so a parsed file survives a round trip
/// through the writer unchanged (NaN payloads aside: compared by their bits' class only).
void check_round_trip(const ruleproof::io::Safetensors &file) {
  const ruleproof::io::Safetensors again =
      ruleproof::io::parse_safetensors(ruleproof::io::safetensors_bytes(file), "round trip");
  if (again.metadata != file.metadata || again.tensors.size() != file.tensors.size())
    std::abort();
  for (const auto &[name, t] : file.tensors) {
    const ruleproof::io::StoredTensor &u = again.tensors.at(name);
    if (u.dtype != t.dtype || u.shape != t.shape || u.values.size() != t.values.size())
      std::abort();
    for (std::size_t i = 0; i < t.values.size(); ++i)
      if (u.values[i] != t.values[i] && !(u.values[i] != u.values[i] && t.values[i] != t.values[i]))
        std::abort();
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char *>(data), size);
  try {
    check_round_trip(ruleproof::io::parse_safetensors(bytes, "fuzz input"));
  } catch (const ruleproof::io::FileError &) {
  }
  return 0;
}
