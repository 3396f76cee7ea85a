// ruleproof: the CI gate and the merge of shards (gate.hpp).
#include "gate.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/core.h>

namespace ruleproof::reports {

std::string to_string(Finding f) {
  switch (f) {
  case Finding::new_failure: return "new failure";
  case Finding::not_finite: return "NaN";
  case Finding::grew: return "error grew";
  case Finding::no_longer_holds: return "no longer holds";
  case Finding::missing: return "missing";
  case Finding::known_failure: return "known failure";
  case Finding::new_result: return "new result";
  case Finding::unchanged: return "unchanged";
  }
  return "?";
}

bool is_regression(Finding f) {
  return f == Finding::new_failure || f == Finding::not_finite || f == Finding::grew ||
         f == Finding::no_longer_holds || f == Finding::missing;
}

std::size_t GateReport::regressions() const {
  return static_cast<std::size_t>(std::count_if(
      items.begin(), items.end(), [](const GateItem &i) { return is_regression(i.finding); }));
}

namespace {

bool has_nan(const Result &r) {
  for (const std::optional<double> &x : {r.worst_error, r.allowed_error, r.error_over_allowed})
    if (x && std::isnan(*x))
      return true;
  return false;
}

std::string g3(const std::optional<double> &x) { return x ? fmt::format("{:.3g}", *x) : "-"; }

GateItem judge(const Result *base, const Result &now, const GateOptions &o) {
  GateItem item{now.id, Finding::unchanged, "", now};
  const std::string numbers = "error " + g3(now.worst_error) + ", allowed " +
                              g3(now.allowed_error) + ", error/allowed " +
                              g3(now.error_over_allowed);
  if (has_nan(now)) {
    item.finding = Finding::not_finite;
    item.message = "a NaN in its errors (" + numbers + ")";
  } else if (now.verdict == Verdict::fails) {
    if (base && base->verdict == Verdict::fails) {
      item.finding = Finding::known_failure;
      item.message = "fails, as in the baseline (" + numbers + ")";
    } else {
      item.finding = Finding::new_failure;
      item.message =
          "fails (" + numbers + "); the baseline " +
          (base ? "says " + to_string(base->verdict) : std::string("has no such result"));
    }
  } else if (base && base->verdict == Verdict::holds && now.verdict != Verdict::holds) {
    item.finding = Finding::no_longer_holds;
    item.message = "now " + to_string(now.verdict) + "; the baseline says holds";
  } else if (!base) {
    item.finding = Finding::new_result;
    item.message = to_string(now.verdict) + "; not in the baseline";
  } else if (now.error_over_allowed && base->error_over_allowed &&
             std::isfinite(*base->error_over_allowed) &&
             *now.error_over_allowed >
                 o.factor * std::max(*base->error_over_allowed, o.min_ratio)) {
    item.finding = Finding::grew;
    item.message =
        fmt::format("error/allowed {:.3g}, {:.3g} times the baseline's {:.3g} (the "
                    "gate allows {} times, from {} up)",
                    *now.error_over_allowed,
                    *now.error_over_allowed / std::max(*base->error_over_allowed, 1e-300),
                    *base->error_over_allowed, o.factor, o.min_ratio);
  } else {
    item.message = to_string(now.verdict) + " (" + numbers + ")";
  }
  return item;
}

std::string xml_escape(const std::string &s) {
  std::string out;
  for (char c : s) {
    switch (c) {
    case '&': out += "&amp;"; break;
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '"': out += "&quot;"; break;
    case '\'': out += "&apos;"; break;
    default:
      if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t')
        out += ' ';
      else
        out += c;
    }
  }
  return out;
}

} // namespace

GateReport compare_with_baseline(const Run &baseline, const Run &current, const GateOptions &o) {
  if (baseline.command != current.command)
    throw ReportError("the baseline is a run of '" + baseline.command + "', the current one of '" +
                      current.command + "': compare runs of one command");
  for (const Run *r : {&baseline, &current})
    if (r->shard)
      throw ReportError(fmt::format("{} is shard {}/{} of a run: join the shards with ruleproof "
                                    "merge first",
                                    r == &baseline ? "the baseline" : "the current run",
                                    r->shard->first, r->shard->second));
  GateReport g;
  if (baseline.seed != current.seed)
    g.notes.push_back(fmt::format("the seeds differ (baseline {}, current {}): other cases",
                                  baseline.seed ? std::to_string(*baseline.seed) : "none",
                                  current.seed ? std::to_string(*current.seed) : "none"));
  if (baseline.command_line != current.command_line)
    g.notes.push_back("the command lines differ: baseline `" + baseline.command_line +
                      "`, current `" + current.command_line + "`");
  std::map<std::string, const Result *> base;
  for (const Result &r : baseline.results)
    base[r.id] = &r;
  std::set<std::string> seen;
  for (const Result &r : current.results) {
    const auto it = base.find(r.id);
    g.items.push_back(judge(it == base.end() ? nullptr : it->second, r, o));
    seen.insert(r.id);
  }
  for (const Result &r : baseline.results)
    if (!seen.count(r.id))
      g.items.push_back({r.id, Finding::missing,
                         "in the baseline (" + to_string(r.verdict) + "), not in this run", r});
  return g;
}

std::string junit_xml(const GateReport &g, const Run &current) {
  std::size_t failures = g.regressions(), skipped = 0;
  for (const GateItem &i : g.items)
    skipped += i.finding == Finding::known_failure ? 1 : 0;
  std::string x = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  const std::string suite = "ruleproof " + current.command;
  x += fmt::format("<testsuites name=\"{}\" tests=\"{}\" failures=\"{}\" skipped=\"{}\" "
                   "time=\"{:.3f}\">\n",
                   xml_escape(suite), g.items.size(), failures, skipped, current.seconds);
  x += fmt::format("  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" "
                   "skipped=\"{}\" time=\"{:.3f}\" timestamp=\"{}\">\n",
                   xml_escape(suite), g.items.size(), failures, skipped, current.seconds,
                   xml_escape(current.started));
  for (const GateItem &i : g.items) {
    const Result &r = i.result;
    std::string classname = current.command;
    for (const std::string &part : {r.rule, r.scalar})
      if (!part.empty())
        classname += "." + part;
    x += fmt::format("    <testcase classname=\"{}\" name=\"{}\" time=\"0\"", xml_escape(classname),
                     xml_escape(i.id));
    if (is_regression(i.finding)) {
      x += fmt::format(">\n      <failure type=\"{}\" message=\"{}\">{}\nreplay: {}</failure>\n"
                       "    </testcase>\n",
                       xml_escape(to_string(i.finding)), xml_escape(i.message),
                       xml_escape(r.where ? r.where->text : std::string()),
                       xml_escape(r.replay.command));
    } else if (i.finding == Finding::known_failure) {
      x += fmt::format(">\n      <skipped message=\"{}\"/>\n    </testcase>\n",
                       xml_escape(i.message));
    } else {
      x += "/>\n";
    }
  }
  x += "  </testsuite>\n</testsuites>\n";
  return x;
}

std::string gate_markdown(const GateReport &g, const Run &current, const std::string &baseline) {
  std::string md =
      fmt::format("### ruleproof gate ({} against `{}`): {}\n\n", current.command, baseline,
                  g.passes() ? "passes" : fmt::format("{} regression(s)", g.regressions()));
  for (const std::string &n : g.notes)
    md += "Note: " + n + ".\n\n";
  const auto section = [&](const std::string &title, auto keep) {
    std::string rows;
    for (const GateItem &i : g.items)
      if (keep(i.finding))
        rows += "| `" + i.id + "` | " + to_string(i.finding) + " | " + i.message + " | `" +
                i.result.replay.command + "` |\n";
    if (!rows.empty())
      md += "#### " + title + "\n\n| result | finding | what | replay |\n|---|---|---|---|\n" +
            rows + "\n";
  };
  section("Regressions", [](Finding f) { return is_regression(f); });
  section("Known failures (fail in the baseline too)",
          [](Finding f) { return f == Finding::known_failure; });
  return md;
}

Run merge_shards(const std::vector<Run> &shards, const std::vector<std::string> &names) {
  if (shards.empty())
    throw ReportError("merge: no files given");
  const Run &first = shards.front();
  for (std::size_t i = 0; i < shards.size(); ++i)
    if (!shards[i].shard)
      throw ReportError(names[i] + ": not a shard (written without --shard)");
  const std::size_t n = first.shard->second;
  std::set<std::size_t> indices;
  for (std::size_t i = 0; i < shards.size(); ++i) {
    const Run &s = shards[i];
    const auto differs = [&](const std::string &what, const std::string &a, const std::string &b) {
      if (a != b)
        throw ReportError(names[i] + ": " + what + " '" + b + "' differs from " + names[0] +
                          "'s '" + a + "': not shards of one run");
    };
    differs("command", first.command, s.command);
    differs("command line", first.command_line, s.command_line);
    differs("seed", first.seed ? std::to_string(*first.seed) : "none",
            s.seed ? std::to_string(*s.seed) : "none");
    differs("tool commit", first.tool_commit, s.tool_commit);
    differs("shard count", std::to_string(n), std::to_string(s.shard->second));
    if (s.details != first.details)
      throw ReportError(names[i] + ": its details differ from " + names[0] +
                        "'s: not shards of one run");
    if (!indices.insert(s.shard->first).second)
      throw ReportError(names[i] + fmt::format(": shard {}/{} given twice", s.shard->first, n));
  }
  for (std::size_t i = 1; i <= n; ++i)
    if (!indices.count(i))
      throw ReportError(fmt::format("merge: shard {}/{} is missing", i, n));
  Run merged = first;
  merged.shard.reset();
  merged.results.clear();
  std::set<std::string> ids;
  for (std::size_t i = 0; i < shards.size(); ++i) {
    const Run &s = shards[i];
    merged.started = std::min(merged.started, s.started);
    merged.finished = std::max(merged.finished, s.finished);
    merged.seconds = std::max(merged.seconds, s.seconds);
    if (s.skipped != first.skipped)
      merged.skipped.clear();
    for (const Result &r : s.results) {
      if (!ids.insert(r.id).second)
        throw ReportError(names[i] + ": result " + r.id + " is in another shard too");
      merged.results.push_back(r);
    }
  }
  return merged;
}

} // namespace ruleproof::reports
