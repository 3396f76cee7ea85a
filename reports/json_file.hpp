// ruleproof reports: writes a JSON document so that no reader ever sees half of it: to a
// temporary file beside the target, flushed and closed, then renamed over the target.
#pragma once

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include <unistd.h>

#include <nlohmann/json.hpp>

namespace ruleproof::reports {

/// Writes `doc` to `path` (creating its folder), atomically on POSIX file systems.
inline void write_json_atomically(const std::filesystem::path &path, const nlohmann::json &doc) {
  namespace fs = std::filesystem;
  if (path.has_parent_path())
    fs::create_directories(path.parent_path());
  fs::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out)
      throw std::runtime_error("cannot write " + tmp.string());
    out << doc.dump(2) << '\n';
    out.flush();
    if (!out)
      throw std::runtime_error("write failed: " + tmp.string());
  }
  fs::rename(tmp, path);
}

} // namespace ruleproof::reports
