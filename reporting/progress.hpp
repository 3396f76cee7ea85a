// ruleproof: a progress line for long runs (cases done, time left), redrawn in place on a
// terminal; silent when the stream is not a terminal or the CI variable is set, so logs and
// CI output stay clean.
#pragma once

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

#include <fmt/core.h>
#include <unistd.h>

namespace ruleproof::reports {

/// True when progress should be drawn on `stream`: it is a terminal and CI is not set.
inline bool progress_wanted(std::FILE *stream) {
  const char *ci = std::getenv("CI");
  if (ci != nullptr && *ci != '\0')
    return false;
  return ::isatty(::fileno(stream)) == 1;
}

/// "1 h 02 min", "3 min 05 s", "12 s": a duration in words a person reads at a glance.
inline std::string duration_words(double seconds) {
  if (!(seconds >= 0))
    return "?";
  const long s = static_cast<long>(seconds + 0.5);
  if (s >= 3600)
    return fmt::format("{} h {:02} min", s / 3600, (s % 3600) / 60);
  if (s >= 60)
    return fmt::format("{} min {:02} s", s / 60, s % 60);
  return fmt::format("{} s", s);
}

/// \brief "label: done/total (percent), elapsed, about T left", the time left extrapolated
/// from the rate so far. Thread-safe; draws at most every `interval` seconds, then once at the
/// end, and clears its line on finish().
class Progress {
public:
  Progress(std::string label, std::size_t total, bool enabled, std::FILE *stream = stderr,
           double interval = 0.25)
      : label_(std::move(label)), total_(total), enabled_(enabled), stream_(stream),
        interval_(interval), start_(std::chrono::steady_clock::now()) {}
  Progress(const Progress &) = delete;
  Progress &operator=(const Progress &) = delete;
  ~Progress() { finish(); }

  /// The line for `done` of the total after `elapsed` seconds.
  static std::string line(const std::string &label, std::size_t done, std::size_t total,
                          double elapsed) {
    std::string s = fmt::format("{}: {}/{}", label, done, total);
    if (total > 0)
      s += fmt::format(" ({}%)", 100 * done / total);
    s += ", " + duration_words(elapsed);
    if (done > 0 && done < total)
      s += ", about " +
           duration_words(elapsed / static_cast<double>(done) * static_cast<double>(total - done)) +
           " left";
    return s;
  }

  /// Counts `n` more done and redraws when due.
  void advance(std::size_t n = 1) {
    std::lock_guard<std::mutex> lock(lock_);
    done_ += n;
    if (!enabled_)
      return;
    const double t = elapsed();
    if (done_ < total_ && t - last_draw_ < interval_)
      return;
    last_draw_ = t;
    const std::string s = line(label_, done_, total_, t);
    fmt::print(stream_, "\r{}\x1b[K", s);
    std::fflush(stream_);
    drawn_ = true;
  }

  /// Clears the line (when one was drawn), so what is printed next starts clean.
  void finish() {
    std::lock_guard<std::mutex> lock(lock_);
    if (enabled_ && drawn_)
      fmt::print(stream_, "\r\x1b[K");
    drawn_ = false;
  }

  std::size_t done() const {
    std::lock_guard<std::mutex> lock(lock_);
    return done_;
  }

private:
  double elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  std::string label_;
  std::size_t total_, done_ = 0;
  bool enabled_;
  std::FILE *stream_;
  double interval_, last_draw_ = -1e300;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_;
  mutable std::mutex lock_;
};

} // namespace ruleproof::reports
