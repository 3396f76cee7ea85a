// ruleproof: the result format's writer, reader and summary (result.hpp).
#include "result.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <iterator>
#include <limits>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/core.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "atomic_write.hpp"
#include "io/json.hpp"

namespace ruleproof::reports {

// build_info.cpp, the one unit that includes the generated header (so a new commit recompiles
// it alone)
const char *tool_version();
const char *tool_commit();

std::string to_string(Verdict v) {
  switch (v) {
  case Verdict::holds: return "holds";
  case Verdict::fails: return "fails";
  case Verdict::undecided: return "undecided";
  case Verdict::ambiguous: return "ambiguous";
  }
  return "?";
}

Verdict verdict_from_string(const std::string &s) {
  for (Verdict v : {Verdict::holds, Verdict::fails, Verdict::undecided, Verdict::ambiguous})
    if (to_string(v) == s)
      return v;
  throw ReportError("verdict '" + s + "' is none of holds, fails, undecided, ambiguous");
}

std::vector<std::size_t> unravel(std::size_t flat, const std::vector<std::size_t> &shape) {
  std::vector<std::size_t> index(shape.size(), 0);
  for (std::size_t d = shape.size(); d-- > 0 && shape[d] > 0; flat /= shape[d])
    index[d] = flat % shape[d];
  return index;
}

namespace {

bool ends_with(const std::string &s, const std::string &tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

/// A state tensor [N, H, K, V]: initial and final states, their gradients, the stage h.
bool is_state(const std::string &name) {
  return ends_with(name, "state") || ends_with(name, "h0") || ends_with(name, "ht") ||
         name == "h" || name == "dh" || name == "S";
}

} // namespace

Where where_in(const std::string &tensor, const std::vector<std::size_t> &index,
               const std::string &text) {
  Where w{tensor, index, {}, {}, {}, text};
  if (index.size() >= 3) {
    if (is_state(tensor)) {
      w.batch = index[0], w.head = index[1];
    } else {
      w.batch = index[0], w.time = index[1], w.head = index[2];
    }
  }
  return w;
}

bool Result::not_finite() const {
  for (const std::optional<double> &x : {worst_error, allowed_error, error_over_allowed})
    if (x && !std::isfinite(*x))
      return true;
  return false;
}

Verdict Run::verdict() const {
  if (results.empty() && !skipped.empty())
    return Verdict::undecided;
  return count(Verdict::fails) > 0 ? Verdict::fails : Verdict::holds;
}

std::size_t Run::count(Verdict v) const {
  return static_cast<std::size_t>(std::count_if(results.begin(), results.end(),
                                                [v](const Result &r) { return r.verdict == v; }));
}

namespace {

std::mutex invocation_lock;
std::vector<std::string> invocation_args;

std::string utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

/// Seconds since the epoch, to the millisecond, for the duration.
double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

Machine this_machine() {
  Machine m;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0)
    m.host = host;
  struct utsname u {};
  if (uname(&u) == 0)
    m.os = std::string(u.sysname) + " " + u.release + " " + u.machine;
  m.cpus = std::thread::hardware_concurrency();
  return m;
}

/// The options whose values are output paths, the shard, or the thread count (no result depends
/// on it): left out of the command line.
bool dropped_option(const std::string &arg, bool &takes_value) {
  for (const char *opt : {"--out", "--summary", "--junit", "--shard", "--threads"}) {
    const std::string o = opt;
    if (arg == o) {
      takes_value = true;
      return true;
    }
    if (arg.rfind(o + "=", 0) == 0) {
      takes_value = false;
      return true;
    }
  }
  return false;
}

} // namespace

void set_invocation(int argc, const char *const *argv) {
  std::lock_guard<std::mutex> lock(invocation_lock);
  invocation_args.assign(argv + std::min(argc, 1), argv + argc);
}

std::string shell_quote(const std::string &word) {
  if (!word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                              "0123456789-_./=:,+@%") == std::string::npos)
    return word;
  std::string q = "'";
  for (char c : word)
    q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string invocation() {
  std::lock_guard<std::mutex> lock(invocation_lock);
  std::string line = "ruleproof";
  for (std::size_t i = 0; i < invocation_args.size(); ++i) {
    bool takes_value = false;
    if (dropped_option(invocation_args[i], takes_value)) {
      i += takes_value ? 1 : 0;
      continue;
    }
    line += " " + shell_quote(invocation_args[i]);
  }
  return line;
}

Run start_run(const std::string &command) {
  Run run;
  run.command = command;
  run.command_line = invocation();
  run.tool_version = tool_version();
  run.tool_commit = tool_commit();
  run.machine = this_machine();
  run.started = utc_now();
  run.clock_start = now_seconds();
  return run;
}

void finish_run(Run &run) {
  run.finished = utc_now();
  run.seconds = run.clock_start > 0 ? now_seconds() - run.clock_start : 0;
}

nlohmann::json number_json(double x) {
  if (std::isnan(x))
    return "nan";
  if (std::isinf(x))
    return x > 0 ? "inf" : "-inf";
  return x;
}

namespace {

nlohmann::json optional_number(const std::optional<double> &x) {
  return x ? number_json(*x) : nlohmann::json(nullptr);
}

template <class T> nlohmann::json optional_json(const std::optional<T> &x) {
  return x ? nlohmann::json(*x) : nlohmann::json(nullptr);
}

nlohmann::json text_or_null(const std::string &s) {
  return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s);
}

nlohmann::json result_json(const Result &r) {
  nlohmann::json where = nullptr;
  if (r.where)
    where = {{"tensor", r.where->tensor},
             {"index", r.where->index},
             {"batch", optional_json(r.where->batch)},
             {"time", optional_json(r.where->time)},
             {"head", optional_json(r.where->head)},
             {"text", r.where->text}};
  return {{"id", r.id},
          {"kind", r.kind},
          {"rule", text_or_null(r.rule)},
          {"scalar", r.scalar},
          {"property", r.property},
          {"output", r.output},
          {"verdict", to_string(r.verdict)},
          {"worst_error", optional_number(r.worst_error)},
          {"allowed_error", optional_number(r.allowed_error)},
          {"error_over_allowed", optional_number(r.error_over_allowed)},
          {"digits", optional_number(r.digits)},
          {"cases", r.cases},
          {"failures", r.failures},
          {"replay",
           {{"seed", optional_json(r.replay.seed)},
            {"case", text_or_null(r.replay.case_description)},
            {"command", r.replay.command}}},
          {"where", where},
          {"details", r.details}};
}

} // namespace

nlohmann::json to_json(const Run &run) {
  nlohmann::json results = nlohmann::json::array();
  for (const Result &r : run.results)
    results.push_back(result_json(r));
  nlohmann::json shard = nullptr;
  if (run.shard)
    shard = {{"index", run.shard->first}, {"count", run.shard->second}};
  return {{"format", format_name},
          {"version", format_version},
          {"command", run.command},
          {"command_line", run.command_line},
          {"seed", optional_json(run.seed)},
          {"tool",
           {{"name", "ruleproof"},
            {"version", run.tool_version},
            {"commit", text_or_null(run.tool_commit)}}},
          {"machine",
           {{"host", run.machine.host},
            {"os", run.machine.os},
            {"cpus", run.machine.cpus},
            {"gpu", text_or_null(run.machine.gpu)}}},
          {"started", run.started},
          {"finished", run.finished},
          {"seconds", run.seconds},
          {"shard", shard},
          {"skipped", text_or_null(run.skipped)},
          {"verdict", to_string(run.verdict())},
          {"counts",
           {{"holds", run.count(Verdict::holds)},
            {"fails", run.count(Verdict::fails)},
            {"undecided", run.count(Verdict::undecided)},
            {"ambiguous", run.count(Verdict::ambiguous)}}},
          {"results", results},
          {"details", run.details}};
}

namespace {

/// Field access that names the file and the field when it is missing or of the wrong type.
struct Reader {
  std::string what;

  [[noreturn]] void fail(const std::string &field, const std::string &problem) const {
    throw ReportError(what + ": " + field + ": " + problem);
  }
  const nlohmann::json &at(const nlohmann::json &j, const std::string &field,
                           const std::string &path) const {
    if (!j.is_object())
      fail(path, "not an object");
    const auto it = j.find(field);
    if (it == j.end())
      fail(path + field, "missing");
    return *it;
  }
  std::string text(const nlohmann::json &j, const std::string &field,
                   const std::string &path = "") const {
    const nlohmann::json &x = at(j, field, path);
    if (x.is_null())
      return "";
    if (!x.is_string())
      fail(path + field, "not a string");
    return x.get<std::string>();
  }
  template <class T>
  std::optional<T> integer(const nlohmann::json &j, const std::string &field,
                           const std::string &path = "") const {
    const nlohmann::json &x = at(j, field, path);
    if (x.is_null())
      return std::nullopt;
    if (!x.is_number_integer() ||
        (x.is_number_integer() && !x.is_number_unsigned() && x.get<std::int64_t>() < 0))
      fail(path + field, "not a nonnegative integer");
    return x.get<T>();
  }
  std::optional<double> number(const nlohmann::json &j, const std::string &field,
                               const std::string &path = "") const {
    const nlohmann::json &x = at(j, field, path);
    if (x.is_null())
      return std::nullopt;
    if (x.is_number())
      return x.get<double>();
    if (x == "inf")
      return std::numeric_limits<double>::infinity();
    if (x == "-inf")
      return -std::numeric_limits<double>::infinity();
    if (x == "nan")
      return std::numeric_limits<double>::quiet_NaN();
    fail(path + field, "not a number, \"inf\", \"-inf\" or \"nan\"");
  }
};

} // namespace

Run from_json(const nlohmann::json &j, const std::string &what) {
  const Reader rd{what};
  if (!j.is_object())
    throw ReportError(what + ": not a JSON object");
  if (!j.contains("format") || j["format"] != format_name)
    throw ReportError(what + ": not a " + std::string(format_name) + " file (its \"format\" is " +
                      (j.contains("format") ? j["format"].dump() : std::string("missing")) + ")");
  if (!j.contains("version") || j["version"] != format_version)
    throw ReportError(what + ": format version " +
                      (j.contains("version") ? j["version"].dump() : std::string("missing")) +
                      ", this ruleproof reads version " + std::to_string(format_version));
  Run run;
  run.command = rd.text(j, "command");
  run.command_line = rd.text(j, "command_line");
  run.seed = rd.integer<std::uint64_t>(j, "seed");
  const nlohmann::json &tool = rd.at(j, "tool", "");
  run.tool_version = rd.text(tool, "version", "tool.");
  run.tool_commit = rd.text(tool, "commit", "tool.");
  const nlohmann::json &machine = rd.at(j, "machine", "");
  run.machine.host = rd.text(machine, "host", "machine.");
  run.machine.os = rd.text(machine, "os", "machine.");
  run.machine.gpu = rd.text(machine, "gpu", "machine.");
  run.machine.cpus = rd.integer<unsigned>(machine, "cpus", "machine.").value_or(0);
  run.started = rd.text(j, "started");
  run.finished = rd.text(j, "finished");
  run.seconds = rd.number(j, "seconds").value_or(0);
  const nlohmann::json &shard = rd.at(j, "shard", "");
  if (!shard.is_null())
    run.shard = {rd.integer<std::size_t>(shard, "index", "shard.").value_or(0),
                 rd.integer<std::size_t>(shard, "count", "shard.").value_or(0)};
  run.skipped = rd.text(j, "skipped");
  run.details = rd.at(j, "details", "");
  const nlohmann::json &results = rd.at(j, "results", "");
  if (!results.is_array())
    rd.fail("results", "not an array");
  for (std::size_t i = 0; i < results.size(); ++i) {
    const nlohmann::json &x = results[i];
    const std::string p = "results[" + std::to_string(i) + "].";
    Result r;
    r.id = rd.text(x, "id", p);
    r.kind = rd.text(x, "kind", p);
    r.rule = rd.text(x, "rule", p);
    r.scalar = rd.text(x, "scalar", p);
    r.property = rd.text(x, "property", p);
    r.output = rd.text(x, "output", p);
    try {
      r.verdict = verdict_from_string(rd.text(x, "verdict", p));
    } catch (const ReportError &e) {
      rd.fail(p + "verdict", e.what());
    }
    r.worst_error = rd.number(x, "worst_error", p);
    r.allowed_error = rd.number(x, "allowed_error", p);
    r.error_over_allowed = rd.number(x, "error_over_allowed", p);
    r.digits = rd.number(x, "digits", p);
    r.cases = rd.integer<std::size_t>(x, "cases", p).value_or(0);
    r.failures = rd.integer<std::size_t>(x, "failures", p).value_or(0);
    const nlohmann::json &replay = rd.at(x, "replay", p);
    r.replay.seed = rd.integer<std::uint64_t>(replay, "seed", p + "replay.");
    r.replay.case_description = rd.text(replay, "case", p + "replay.");
    r.replay.command = rd.text(replay, "command", p + "replay.");
    const nlohmann::json &where = rd.at(x, "where", p);
    if (!where.is_null()) {
      Where w;
      w.tensor = rd.text(where, "tensor", p + "where.");
      const nlohmann::json &index = rd.at(where, "index", p + "where.");
      if (!index.is_array())
        rd.fail(p + "where.index", "not an array");
      for (const nlohmann::json &k : index) {
        if (!k.is_number_unsigned())
          rd.fail(p + "where.index", "not an array of nonnegative integers");
        w.index.push_back(k.get<std::size_t>());
      }
      w.batch = rd.integer<std::size_t>(where, "batch", p + "where.");
      w.time = rd.integer<std::size_t>(where, "time", p + "where.");
      w.head = rd.integer<std::size_t>(where, "head", p + "where.");
      w.text = rd.text(where, "text", p + "where.");
      r.where = w;
    }
    r.details = rd.at(x, "details", p);
    run.results.push_back(std::move(r));
  }
  return run;
}

Run read_run(const std::filesystem::path &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw ReportError(path.string() + ": no such file, or it cannot be read");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const io::ParsedJson parsed = io::parse_json(text);
  if (!parsed.error.empty())
    throw ReportError(path.string() + ": not valid JSON (" + parsed.error + ")");
  return from_json(parsed.value, path.string());
}

namespace {

std::string cell(std::string s) {
  std::string out;
  for (char c : s)
    out += c == '|' ? std::string("\\|") : c == '\n' ? std::string(" ") : std::string(1, c);
  return out;
}

std::string num(const std::optional<double> &x) {
  if (!x)
    return "-";
  if (std::isnan(*x))
    return "**NaN**";
  if (std::isinf(*x))
    return *x > 0 ? "**inf**" : "**-inf**";
  return fmt::format("{:.3g}", *x);
}

std::string where_words(const Result &r) {
  if (!r.where)
    return "-";
  const Where &w = *r.where;
  std::string s = "`" + w.tensor;
  if (!w.index.empty()) {
    s += "[";
    for (std::size_t i = 0; i < w.index.size(); ++i)
      s += (i ? ", " : "") + std::to_string(w.index[i]);
    s += "]";
  }
  s += "`";
  std::vector<std::string> parts;
  if (w.batch)
    parts.push_back((w.time ? "batch " : "sequence ") + std::to_string(*w.batch));
  if (w.time)
    parts.push_back("t = " + std::to_string(*w.time));
  if (w.head)
    parts.push_back("head " + std::to_string(*w.head));
  if (!parts.empty()) {
    s += " (";
    for (std::size_t i = 0; i < parts.size(); ++i)
      s += (i ? ", " : "") + parts[i];
    s += ")";
  }
  return s;
}

std::string what_words(const Result &r) {
  std::string s = "`" + (r.rule.empty() ? r.id : r.rule) + "` "; // a claim: its id
  s += r.scalar + " " + r.property;
  if (!r.output.empty())
    s += " / " + r.output;
  return s;
}

std::string replay_words(const Result &r) {
  std::string s = "`" + r.replay.command + "`";
  if (r.replay.seed)
    s += " (case seed " + std::to_string(*r.replay.seed) +
         (r.replay.case_description.empty() ? "" : ": " + r.replay.case_description) + ")";
  return s;
}

void table(std::string &md, const std::vector<const Result *> &rows, std::size_t max_rows) {
  md += "| result | where | worst error | allowed | error / allowed | digits | replay |\n"
        "|---|---|---|---|---|---|---|\n";
  for (std::size_t i = 0; i < rows.size() && i < max_rows; ++i) {
    const Result &r = *rows[i];
    md += "| " + cell(what_words(r)) + " | " + cell(where_words(r)) + " | " + num(r.worst_error) +
          " | " + num(r.allowed_error) + " | " + num(r.error_over_allowed) + " | " + num(r.digits) +
          " | " + cell(replay_words(r)) + " |\n";
  }
  if (rows.size() > max_rows)
    md += fmt::format("\n... and {} more in the JSON report.\n", rows.size() - max_rows);
}

/// Worst first: not finite, then by error / allowed.
double severity(const Result &r) {
  if (r.not_finite())
    return std::numeric_limits<double>::infinity();
  return r.error_over_allowed.value_or(0);
}

} // namespace

std::string summary_markdown(const Run &run, std::size_t max_rows) {
  const std::size_t fails = run.count(Verdict::fails);
  std::string md = fmt::format("### ruleproof {}: ", run.command);
  if (!run.skipped.empty())
    md += "skipped (" + run.skipped + ")\n\n";
  else if (fails > 0)
    md += fmt::format("{} of {} results fail\n\n", fails, run.results.size());
  else
    md +=
        fmt::format("all {} results hold\n\n", run.results.size() - run.count(Verdict::undecided) -
                                                   run.count(Verdict::ambiguous));
  md += "`" + run.command_line + "`";
  if (run.seed)
    md += fmt::format(", seed {}", *run.seed);
  if (run.shard)
    md += fmt::format(", shard {}/{}", run.shard->first, run.shard->second);
  md += ", ruleproof " + run.tool_version +
        (run.tool_commit.empty() ? "" : " (" + run.tool_commit + ")") + ", " + run.machine.host +
        fmt::format(" ({} CPUs{})", run.machine.cpus,
                    run.machine.gpu.empty() ? "" : ", GPU: " + run.machine.gpu) +
        fmt::format(", {:.1f} s\n\n", run.seconds);
  md += "| holds | fails | undecided | ambiguous |\n|---|---|---|---|\n";
  md += fmt::format("| {} | {} | {} | {} |\n\n", run.count(Verdict::holds), fails,
                    run.count(Verdict::undecided), run.count(Verdict::ambiguous));
  const auto pick = [&](auto keep) {
    std::vector<const Result *> rows;
    for (const Result &r : run.results)
      if (keep(r))
        rows.push_back(&r);
    std::stable_sort(rows.begin(), rows.end(),
                     [](const Result *a, const Result *b) { return severity(*a) > severity(*b); });
    return rows;
  };
  md += "The worst error is at the element where error / allowed is largest; the allowed error "
        "there is what the precision of the computation allows (a bound computed from the "
        "precision, or the emulated twin's error for kernels); above 1 fails.\n\n";
  const auto failing = pick([](const Result &r) { return r.verdict == Verdict::fails; });
  if (!failing.empty()) {
    md += "#### What fails\n\n";
    table(md, failing, max_rows);
    md += "\n";
  }
  const auto open = pick([](const Result &r) {
    return r.verdict == Verdict::undecided || r.verdict == Verdict::ambiguous;
  });
  if (!open.empty()) {
    md += "#### Undecided or ambiguous\n\n";
    table(md, open, max_rows);
    md += "\n";
  }
  const auto holding = pick([](const Result &r) { return r.verdict == Verdict::holds; });
  if (!holding.empty()) {
    md += "#### Holding results nearest their limit\n\n";
    table(md, holding, std::min<std::size_t>(5, max_rows));
  }
  return md;
}

std::filesystem::path summary_path_for(const std::filesystem::path &json) {
  std::filesystem::path p = json;
  p.replace_extension(".summary.md");
  return p;
}

void write_run(Run &run, const std::filesystem::path &json, const std::filesystem::path &summary) {
  std::stable_sort(run.results.begin(), run.results.end(),
                   [](const Result &a, const Result &b) { return a.id < b.id; });
  for (std::size_t i = 1; i < run.results.size(); ++i)
    if (run.results[i].id == run.results[i - 1].id)
      throw std::logic_error("two results with the id " + run.results[i].id);
  write_file_atomically(json, to_json(run).dump(1) + "\n");
  write_file_atomically(summary.empty() ? summary_path_for(json) : summary, summary_markdown(run));
}

} // namespace ruleproof::reports
