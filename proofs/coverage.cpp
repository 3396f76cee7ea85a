// ruleproof: which displayed equations of a seed note the claims cover (see coverage.hpp).
#include "coverage.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <iterator>
#include <regex>
#include <utility>

#include <fmt/core.h>

namespace ruleproof::proofs {

namespace {

using Span = std::pair<std::size_t, std::size_t>; // [begin, end) in the note

bool starts_with(const std::string &s, std::size_t at, const char *prefix) {
  return s.compare(at, std::char_traits<char>::length(prefix), prefix) == 0;
}

bool blank(const std::string &s, Span span) {
  static const std::regex only_layout(R"(\s*(\\(begin|end)\{aligned\}\s*)*)");
  return std::regex_match(s.begin() + static_cast<std::ptrdiff_t>(span.first),
                          s.begin() + static_cast<std::ptrdiff_t>(span.second), only_layout);
}

/// The span without surrounding spaces and without the aligned environment's markers.
Span trimmed(const std::string &s, Span span) {
  for (bool changed = true; changed;) {
    changed = false;
    while (span.first < span.second && std::isspace(static_cast<unsigned char>(s[span.first])))
      ++span.first, changed = true;
    while (span.second > span.first && std::isspace(static_cast<unsigned char>(s[span.second - 1])))
      --span.second, changed = true;
    for (const char *marker : {"\\begin{aligned}", "\\end{aligned}"}) {
      const std::size_t n = std::char_traits<char>::length(marker);
      if (span.second - span.first >= n && starts_with(s, span.first, marker))
        span.first += n, changed = true;
      if (span.second - span.first >= n && s.compare(span.second - n, n, marker) == 0)
        span.second -= n, changed = true;
    }
  }
  return span;
}

/// Where `span` splits at top level (outside braces and outside any environment but
/// aligned): at each position `is_split(at)` accepts, the separator `width(at)` bytes long.
template <class Accept>
std::vector<Span> split_top(const std::string &s, Span span, Accept accept) {
  std::vector<Span> out;
  int depth = 0, environments = 0;
  std::size_t start = span.first;
  for (std::size_t i = span.first; i < span.second; ++i) {
    if (starts_with(s, i, "\\begin{") && !starts_with(s, i, "\\begin{aligned}"))
      ++environments;
    else if (starts_with(s, i, "\\end{") && !starts_with(s, i, "\\end{aligned}"))
      --environments;
    else if (s[i] == '\\' && i + 1 < span.second && s[i + 1] != '\\')
      ++i; // an escaped character or a command's first letter: never a separator
    else if (s[i] == '{')
      ++depth;
    else if (s[i] == '}')
      --depth;
    else if (depth == 0 && environments == 0)
      if (const std::size_t width = accept(Span{start, i}, i)) {
        out.push_back({start, i});
        start = i + width;
        i = start - 1;
      }
  }
  out.push_back({start, span.second});
  return out;
}

/// Whether the first character after `at` and any spaces is `c`.
bool next_is(const std::string &s, std::size_t at, char c) {
  while (at < s.size() && std::isspace(static_cast<unsigned char>(s[at])))
    ++at;
  return at < s.size() && s[at] == c;
}

/// Whether the line at `at` continues the expression of the line before: it starts with an
/// operator ("&+ ...", "- ..."), not with a relation or a new left-hand side.
bool continues(const std::string &s, std::size_t at) {
  if (at < s.size() && s[at] == '&')
    ++at;
  return next_is(s, at, '+') || next_is(s, at, '-');
}

/// The rows of one display's body: its lines (\\), the equations side by side in a line (a
/// lone & after an equation), and the equations of a list (",\quad" before another "=").
std::vector<Span> rows_of_display(const std::string &s, Span body) {
  std::vector<Span> rows, lines;
  for (Span line : split_top(s, body, [&](Span, std::size_t at) -> std::size_t {
         return starts_with(s, at, "\\\\") ? 2 : 0;
       })) {
    if (blank(s, line))
      continue;
    line = trimmed(s, line);
    if (!lines.empty() && continues(s, line.first))
      lines.back().second = line.second; // "&+ ...": more terms of the line before
    else
      lines.push_back(line);
  }
  for (Span line : lines) {
    const auto columns = split_top(s, line, [&](Span before, std::size_t at) -> std::size_t {
      if (s[at] != '&' || continues(s, at) || next_is(s, at + 1, '='))
        return 0;
      const std::string left = s.substr(before.first, at - before.first);
      return left.find('=') != std::string::npos ? 1 : 0; // a new equation's column
    });
    for (Span column : columns) {
      const auto items = split_top(s, column, [&](Span, std::size_t at) -> std::size_t {
        if (!starts_with(s, at, ",\\quad"))
          return 0;
        const std::size_t next = s.find(",\\quad", at + 1);
        const std::string rest = s.substr(at, std::min(next, column.second) - at);
        return rest.find('=') != std::string::npos && rest.find("\\text{for}") == std::string::npos
                   ? 6
                   : 0;
      });
      for (Span item : items)
        if (!blank(s, item))
          rows.push_back(trimmed(s, item));
    }
  }
  return rows;
}

/// The displays between `open` and `close` delimiters.
std::vector<Span> delimited(const std::string &s, const std::string &open,
                            const std::string &close) {
  std::vector<Span> rows;
  for (std::size_t at = s.find(open); at != std::string::npos;) {
    const std::size_t body = at + open.size(), end = s.find(close, body);
    if (end == std::string::npos)
      break;
    for (Span r : rows_of_display(s, {body, end}))
      rows.push_back(r);
    at = s.find(open, end + close.size());
  }
  return rows;
}

/// The formula lines of a note extracted from HTML: a line of an aligned derivation
/// (\displaystyle), or a line whose first word is a formula (it holds "=") followed by its
/// LaTeX source; and each numbered statement, from its title to the end of the formula that
/// states it.
std::vector<Span> formula_lines(const std::string &s) {
  std::vector<Span> lines;
  for (std::size_t at = 0; at < s.size();) {
    std::size_t end = s.find('\n', at);
    if (end == std::string::npos)
      end = s.size();
    lines.push_back({at, end});
    at = end + 1;
  }
  static const std::regex statement(R"((Proposition|Lemma|Theorem|Corollary)( \d+)?\.)");
  const auto is_formula = [&](Span l) {
    const std::string line = s.substr(l.first, l.second - l.first);
    if (line.find("\\displaystyle") != std::string::npos)
      return true;
    const std::string first = line.substr(0, line.find(' '));
    return !line.empty() && line[0] != '(' && first.find('=') != std::string::npos &&
           line.find('\\') != std::string::npos;
  };
  std::vector<Span> rows;
  for (std::size_t k = 0; k < lines.size(); ++k) {
    const Span l = lines[k];
    if (is_formula(l))
      rows.push_back(l);
    else if (std::regex_match(s.begin() + static_cast<std::ptrdiff_t>(l.first),
                              s.begin() + static_cast<std::ptrdiff_t>(l.second), statement)) {
      std::size_t j = k + 1;
      while (j < lines.size() && !is_formula(lines[j]))
        ++j;
      rows.push_back({l.first, j < lines.size() ? lines[j].second : l.second});
    }
  }
  return rows;
}

int line_of(const std::string &s, std::size_t at) {
  return 1 +
         static_cast<int>(std::count(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
}

/// Every place `quote` is found verbatim in `note`.
std::vector<Span> places_of(const std::string &note, const std::string &quote) {
  std::vector<Span> out;
  if (quote.empty())
    return out;
  for (std::size_t at = note.find(quote); at != std::string::npos; at = note.find(quote, at + 1))
    out.push_back({at, at + quote.size()});
  return out;
}

bool overlap(Span a, const Display &d) { return a.first < d.end && d.begin < a.second; }

/// A short excerpt of a row for a table cell: its first characters, on one line, with |
/// escaped.
std::string excerpt(const std::string &text, std::size_t characters = 70) {
  std::string out;
  std::size_t n = 0;
  bool space = false;
  for (std::size_t i = 0; i < text.size() && n < characters; ++i) {
    const unsigned char ch = static_cast<unsigned char>(text[i]);
    if (std::isspace(ch)) {
      space = !out.empty();
      continue;
    }
    if (space)
      out += ' ', ++n, space = false;
    if (ch == '|')
      out += "\\|";
    else if (ch == '`')
      out += '\'';
    else
      out += text[i];
    if ((ch & 0xC0) != 0x80)
      ++n;
  }
  while (!out.empty() && (static_cast<unsigned char>(out.back()) & 0xC0) == 0xC0)
    out.pop_back(); // never end on a cut character
  return n >= characters ? out + " ..." : out;
}

} // namespace

std::vector<Display> displays_of(const std::string &note) {
  std::vector<Span> spans;
  if (note.find("$$") != std::string::npos)
    spans = delimited(note, "$$", "$$");
  else if (note.find("\\[") != std::string::npos)
    spans = delimited(note, "\\[", "\\]");
  else
    spans = formula_lines(note);
  std::vector<Display> out;
  for (Span s : spans)
    out.push_back(
        {s.first, s.second, line_of(note, s.first), note.substr(s.first, s.second - s.first)});
  return out;
}

std::vector<std::size_t> NoteCoverage::uncovered() const {
  std::vector<std::size_t> out;
  for (std::size_t r = 0; r < rows.size(); ++r)
    if (claims[r].empty() && reasons[r].empty())
      out.push_back(r);
  return out;
}

NoteCoverage coverage_of(const std::string &file, const std::string &note,
                         const std::vector<const Claim *> &claims,
                         const std::vector<NoClaimNeeded> &reasons) {
  NoteCoverage c;
  c.file = file;
  c.rows = displays_of(note);
  c.claims.resize(c.rows.size());
  c.reasons.resize(c.rows.size());
  for (const Claim *claim : claims) {
    if (claim->source.file != file)
      continue;
    const auto places = places_of(note, claim->quote);
    const auto place = static_cast<std::size_t>(claim->occurrence - 1);
    if (claim->occurrence < 1 || place >= places.size())
      continue; // the registry's own check reports a quote not found, or not so often
    for (std::size_t r = 0; r < c.rows.size(); ++r)
      if (overlap(places[place], c.rows[r]))
        c.claims[r].push_back(claim->id);
  }
  for (const NoClaimNeeded &n : reasons) {
    if (n.file != file)
      continue;
    const auto places = places_of(note, n.quote);
    if (places.empty()) {
      c.problems.push_back("a reason's quote is not found verbatim in " + file + ": " + n.quote);
      continue;
    }
    bool found = false; // a reason holds wherever its text is: a definition restated
    for (std::size_t r = 0; r < c.rows.size(); ++r)
      if (std::any_of(places.begin(), places.end(),
                      [&](Span p) { return overlap(p, c.rows[r]); })) {
        found = true;
        if (!c.claims[r].empty())
          c.problems.push_back(fmt::format("{} row {} has a reason and claims ({}): {}", file,
                                           r + 1, c.claims[r].front(), n.quote));
        c.reasons[r] = n.reason;
      }
    if (!found)
      c.problems.push_back("a reason's quote lies in no displayed equation of " + file + ": " +
                           n.quote);
  }
  return c;
}

std::vector<NoteCoverage> coverage_of_notes(const std::vector<const Claim *> &claims,
                                            const std::vector<NoClaimNeeded> &reasons,
                                            const std::filesystem::path &seeds_dir) {
  std::vector<std::string> files;
  for (const Claim *c : claims)
    if (std::find(files.begin(), files.end(), c->source.file) == files.end())
      files.push_back(c->source.file);
  std::vector<NoteCoverage> out;
  for (const std::string &f : files) {
    std::ifstream in(seeds_dir / f, std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    out.push_back(coverage_of(f, text, claims, reasons));
  }
  return out;
}

std::vector<std::string> coverage_problems(const std::vector<NoteCoverage> &notes) {
  std::vector<std::string> out;
  for (const NoteCoverage &n : notes) {
    out.insert(out.end(), n.problems.begin(), n.problems.end());
    for (std::size_t r : n.uncovered())
      out.push_back(fmt::format("{} row {} (line {}) is neither covered by a claim nor given a "
                                "reason: {}",
                                n.file, r + 1, n.rows[r].line, excerpt(n.rows[r].text)));
  }
  return out;
}

std::string coverage_markdown(const std::vector<NoteCoverage> &notes) {
  std::string md = "\n## Coverage of the notes\n\n"
                   "Every displayed equation of each note, found from the note's own delimiters "
                   "($$, \\[ \\], the formula lines of a note extracted from HTML), one row for "
                   "each line of a derivation, each equation side by side and each numbered "
                   "statement. A claim covers the rows its quote lies in; a row no claim covers "
                   "states why it needs none (proofs/claims/no_claim_needed.cpp).\n\n"
                   "| note | rows | covered by claims | a reason given | neither |\n"
                   "|---|---|---|---|---|\n";
  for (const NoteCoverage &n : notes) {
    std::size_t covered = 0, reasoned = 0;
    for (std::size_t r = 0; r < n.rows.size(); ++r)
      covered += n.claims[r].empty() ? 0 : 1,
          reasoned += n.claims[r].empty() && !n.reasons[r].empty();
    md += fmt::format("| {} | {} | {} | {} | {} |\n", n.file, n.rows.size(), covered, reasoned,
                      n.uncovered().size());
  }
  for (const NoteCoverage &n : notes) {
    md += "\n### Coverage of " + n.file +
          "\n\n| row | line | equation | covered by |\n|---|---|---|---|\n";
    for (std::size_t r = 0; r < n.rows.size(); ++r) {
      std::string by;
      for (const std::string &id : n.claims[r])
        by += (by.empty() ? "" : ", ") + id;
      if (by.empty())
        by = n.reasons[r].empty() ? "**no claim, no reason**" : "needs none: " + n.reasons[r];
      md += fmt::format("| {} | {} | `{}` | {} |\n", r + 1, n.rows[r].line, excerpt(n.rows[r].text),
                        by);
    }
  }
  return md;
}

} // namespace ruleproof::proofs
