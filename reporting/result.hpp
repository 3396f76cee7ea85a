// ruleproof: the one result format every command writes (reporting/schema/result-v1.schema.json,
// described in reporting/schema/README.md): an envelope saying what ran, where and when, and one
// Result per thing checked (a property of a rule in a scalar, a claim, a kernel's output), each
// with its verdict, its worst error against the error allowed, where that error is, and how to
// replay it. One writer (write_run) for every command, one reader (read_run) for gate and merge.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ruleproof::reports {

/// The name and version written into every result file; a reader refuses any other.
inline constexpr const char *format_name = "ruleproof-result";
inline constexpr int format_version = 1;

/// \brief A result file that cannot be used: missing, not JSON, another format or version,
/// a field of the wrong type. The message names the file and the problem.
class ReportError : public std::invalid_argument {
public:
  using std::invalid_argument::invalid_argument;
};

/// holds: within what the precision allows; fails: beyond it, or not finite; undecided: the
/// precision cannot decide (an infinite bound); ambiguous: several readings, not all agreeing.
enum class Verdict { holds, fails, undecided, ambiguous };
std::string to_string(Verdict v);
Verdict verdict_from_string(const std::string &s); ///< throws ReportError

/// \brief Where the worst error is: the tensor, its index in the tensor's shape, and when the
/// tensor is laid out as flash-linear-attention lays it out, the batch row (or sequence), time
/// step and head that index names.
struct Where {
  std::string tensor;
  std::vector<std::size_t> index;
  std::optional<std::size_t> batch, time, head;
  std::string text; ///< the same in words, with both values
};

/// Where from a tensor name and index: [B, T, H, ...] tensors give batch, time and head;
/// states ([N, H, K, V]: names ending in "state", "h0", "ht", or the stage "h", "dh") give the
/// sequence as batch and the head.
Where where_in(const std::string &tensor, const std::vector<std::size_t> &index,
               const std::string &text = "");

/// Row-major index of element `flat` in a tensor of `shape`.
std::vector<std::size_t> unravel(std::size_t flat, const std::vector<std::size_t> &shape);

/// \brief How to run this one result again.
struct Replay {
  std::optional<std::uint64_t> seed; ///< the seed of the failing (or worst) case
  std::string case_description;      ///< its sizes and options, when known
  std::string command;               ///< a command line that replays it
};

/// \brief One thing checked.
struct Result {
  std::string id;       ///< unique in a run, stable across runs: what gate matches on
  std::string kind;     ///< property, claim, kernel, dump
  std::string rule;     ///< may be empty (a claim of a note names no rule)
  std::string scalar;   ///< the scalar type, storage type or arithmetic
  std::string property; ///< what is stated
  std::string output;   ///< the form, output or reading compared
  Verdict verdict = Verdict::holds;
  /// The worst error seen, the error allowed there, and their ratio (<= 1 holds). Empty when
  /// the check measures none; may be +infinity or NaN (written as "inf", "nan").
  std::optional<double> worst_error, allowed_error, error_over_allowed;
  std::optional<double> digits; ///< decimal digits agreed, normwise; +infinity when exact
  std::size_t cases = 0, failures = 0;
  Replay replay;
  std::optional<Where> where;
  nlohmann::json details = nlohmann::json::object(); ///< command-specific, free form
  /// True when an error or ratio is NaN or infinite (a NaN or Inf was seen).
  bool not_finite() const;
};

struct Machine {
  std::string host, os, gpu;
  unsigned cpus = 0;
};

/// \brief One run of one command.
struct Run {
  std::string command;      ///< verify, claims, gpu-check, check-dump
  std::string command_line; ///< replays the run (output paths, --shard, --threads left out)
  std::optional<std::uint64_t> seed;
  std::string tool_version, tool_commit; ///< the commit: empty when unknown
  Machine machine;
  std::string started, finished; ///< UTC, ISO 8601
  double seconds = 0;
  std::optional<std::pair<std::size_t, std::size_t>> shard; ///< (i, n), 1 <= i <= n
  std::string skipped; ///< why nothing was checked (gpu-check without a GPU)
  std::vector<Result> results;
  nlohmann::json details = nlohmann::json::object(); ///< command-specific, free form
  double clock_start = 0; ///< not written: the steady clock's reading at start_run

  /// fails when any result fails, else holds.
  Verdict verdict() const;
  std::size_t count(Verdict v) const;
};

/// \brief A Run with the envelope filled: version, commit, machine, start time now; the
/// command line from argv (see invocation()).
Run start_run(const std::string &command);
/// Sets the finish time and duration.
void finish_run(Run &run);

/// Remembers main's argv, so start_run can record the command line.
void set_invocation(int argc, const char *const *argv);
/// The command line that replays this run: "ruleproof" and every argument but the output
/// paths (--out, --summary, --junit), --shard, --threads and their values, quoted for a POSIX
/// shell.
std::string invocation();
/// Quotes one word for a POSIX shell when it needs quoting.
std::string shell_quote(const std::string &word);

/// The fields that differ between two runs of the same command on the same inputs: the times.
inline const std::vector<std::string> timing_fields{"started", "finished", "seconds"};

nlohmann::json to_json(const Run &run);
/// Reads a run; throws ReportError naming `what` (a file name) and the field when malformed.
Run from_json(const nlohmann::json &j, const std::string &what);

/// Reads a result file; throws ReportError when it is missing, not JSON, of another format or
/// version, or malformed.
Run read_run(const std::filesystem::path &path);

/// \brief The Markdown a reviewer pastes into a pull request: the counts, every result that
/// does not hold with where, by how much, against what the precision allows and the command
/// that replays it; when all hold, the results nearest their limit.
std::string summary_markdown(const Run &run, std::size_t max_rows = 40);

/// The summary's default path beside a JSON file: verify.json -> verify.summary.md.
std::filesystem::path summary_path_for(const std::filesystem::path &json);

/// Writes the run as JSON (atomically) and its summary (at `summary`, or beside the JSON when
/// empty). Results are ordered by id, ids must be unique (else std::logic_error).
void write_run(Run &run, const std::filesystem::path &json, const std::filesystem::path &summary);

/// A number that may be infinite or NaN, as the format writes it.
nlohmann::json number_json(double x);

} // namespace ruleproof::reports
