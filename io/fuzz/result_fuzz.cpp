// ruleproof: libFuzzer target of the result-file reader (reporting/result.hpp), which `gate` and
// `merge` use on files they did not write. Any input must parse or be refused with a
// ReportError; a run that parses is then gated against itself, summarised and merged as one
// shard, as `gate` and `merge` do.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "io/json.hpp"
#include "reporting/gate.hpp"
#include "reporting/result.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char *>(data), size);
  try {
    // What read_run does with a file's text.
    const ruleproof::io::ParsedJson parsed = ruleproof::io::parse_json(text);
    if (!parsed.error.empty())
      return 0;
    const ruleproof::reports::Run run = ruleproof::reports::from_json(parsed.value, "fuzz input");
    const ruleproof::reports::GateReport g =
        ruleproof::reports::compare_with_baseline(run, run, {});
    (void)ruleproof::reports::gate_markdown(g, run, "fuzz input");
    (void)ruleproof::reports::junit_xml(g, run);
    (void)ruleproof::reports::summary_markdown(run);
    (void)ruleproof::reports::merge_shards({run}, {"fuzz input"});
  } catch (const ruleproof::reports::ReportError &) {
  }
  return 0;
}
