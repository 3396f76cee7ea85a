// ruleproof: libFuzzer target of `ruleproof run`'s input reader (cli/input_file.hpp). Any input
// must parse or be refused with an InputError, and what parses must pass or fail the checks
// every rule makes before computing (reference/core/validate.hpp), for each kind of gate.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "cli/input_file.hpp"
#include "reference/core/validate.hpp"

namespace {

using ruleproof::GateKind;
using ruleproof::Signature;

/// One rule's checks of each shape: no gate, a gate per head with beta, per key with the
/// low-rank pair, per value with the normalised state's extra column.
const Signature signatures[] = {
    {},
    {.gate = GateKind::scalar, .has_beta = true},
    {.gate = GateKind::key, .has_ab = true},
    {.gate = GateKind::value, .extra_state_columns = 1},
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char *>(data), size);
  try {
    const auto file = ruleproof::cli::parse_input_file<double>(text, "fuzz input");
    for (const Signature &sig : signatures) {
      try {
        ruleproof::validate(file.in, file.opts, sig);
      } catch (const ruleproof::InputError &) {
      }
    }
  } catch (const ruleproof::InputError &) {
  }
  return 0;
}
