// ruleproof: write a file whole or not at all (temporary file, then rename).
#pragma once

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include <unistd.h>

namespace ruleproof::reports {

/// \brief Writes `content` to `path` through a temporary file in the same folder and a
/// rename, so a reader never sees a half-written file (on POSIX file systems) and a failed
/// write leaves the old file as it was. Creates the folder if needed.
inline void write_file_atomically(const std::filesystem::path &path, const std::string &content) {
  namespace fs = std::filesystem;
  if (path.has_parent_path())
    fs::create_directories(path.parent_path());
  const fs::path tmp = path.string() + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      throw std::runtime_error("cannot write " + tmp.string());
    out << content;
    out.flush();
    if (!out)
      throw std::runtime_error("writing " + tmp.string() + " failed");
  }
  fs::rename(tmp, path);
}

} // namespace ruleproof::reports
