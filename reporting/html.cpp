// ruleproof: the HTML report (html.hpp). The page is a fixed shell, the runs' JSON and the
// script and style of reporting/html/; the script draws everything from the JSON.
#include "html.hpp"

#include <string>

#include <nlohmann/json.hpp>

#include "atomic_write.hpp"
#include "ruleproof_html_assets.hpp"

namespace ruleproof::reports {

namespace {

/// Text for an HTML text node.
std::string escape_html(const std::string &s) {
  std::string out;
  for (char c : s)
    out += c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;" : std::string(1, c);
  return out;
}

/// The runs as JSON inside a <script> element: every '<' written as \u003c (the same string
/// to JSON.parse), so no text in a run can close the element or open a comment.
std::string embedded_json(const std::vector<Run> &runs, const std::vector<std::string> &sources) {
  nlohmann::json j = {{"sources", sources}, {"runs", nlohmann::json::array()}};
  for (const Run &run : runs)
    j["runs"].push_back(to_json(run));
  std::string out;
  for (char c : j.dump())
    out += c == '<' ? std::string("\\u003c") : std::string(1, c);
  return out;
}

/// Runs before the page's script: keeps every script error and shows what was drawn, so a
/// reader (or a test reading the DOM) sees whether the page rendered.
const char *status_script = R"js(
window.ruleproofStatus = {state: "running", plots: 0, empty_plots: [], paths: 0, points: 0,
                          tables: 0, rows: 0, errors: []};
window.ruleproofShowStatus = function () {
  var s = window.ruleproofStatus, e = document.getElementById("render-status");
  e.textContent = JSON.stringify(s);
  e.setAttribute("data-state", s.errors.length ? "error" : s.state);
};
window.addEventListener("error", function (ev) {
  window.ruleproofStatus.errors.push(ev.message + " (line " + ev.lineno + ")");
  window.ruleproofShowStatus();
});
window.ruleproofShowStatus();
)js";

} // namespace

std::string html_report(const std::vector<Run> &runs, const std::vector<std::string> &sources) {
  std::string commands, files;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    commands += (i ? ", " : "") + runs[i].command;
    files += (i ? ", " : "") + (i < sources.size() ? sources[i] : runs[i].command);
  }
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>"
         "ruleproof: " +
         escape_html(commands) + "</title>\n<style>\n" + html_assets::page_css +
         "</style>\n</head>\n<body>\n<h1>ruleproof: " + escape_html(commands) +
         "</h1>\n<p class=\"sources\">" + escape_html(files) +
         "</p>\n<noscript>This report draws its plots and tables with JavaScript.</noscript>\n"
         "<main id=\"report\"></main>\n<pre id=\"render-status\" data-state=\"no script\"></pre>\n"
         "<script type=\"application/json\" id=\"ruleproof-data\">" +
         embedded_json(runs, sources) + "</script>\n<script>" + status_script +
         "</script>\n<script>\n" + html_assets::page_js + "</script>\n</body>\n</html>\n";
}

void write_html(const std::vector<Run> &runs, const std::vector<std::string> &sources,
                const std::filesystem::path &out) {
  write_file_atomically(out, html_report(runs, sources));
}

std::filesystem::path html_path_for(const std::filesystem::path &json) {
  std::filesystem::path p = json;
  return p.replace_extension(".html");
}

} // namespace ruleproof::reports
