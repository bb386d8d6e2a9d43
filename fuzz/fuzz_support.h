#pragma once
// For fuzz targets whose parser reads a file: the input is written to a file of this process's own
// temporary directory, and the parser is given its path.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

namespace moe::fuzz {

// A directory of this process's own, created on first use and removed at exit; in memory
// (/dev/shm) where there is one, as the target writes a file for every input.
class ScratchDirectory {
 public:
  ScratchDirectory() {
    const std::filesystem::path base = std::filesystem::is_directory("/dev/shm") ? std::filesystem::path("/dev/shm")
                                                                                  : std::filesystem::temp_directory_path();
    path_ = base / ("moe_fuzz_" + std::to_string(::getpid()));
    std::filesystem::create_directories(path_);
  }
  ~ScratchDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline const std::filesystem::path& scratch_directory() {
  static const ScratchDirectory dir;
  return dir.path();
}

// Writes the input to scratch_directory()/name and returns the file's path.
inline std::string write_input(const std::string& name, const uint8_t* data, size_t size) {
  const std::filesystem::path path = scratch_directory() / name;
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data),
                                                                 static_cast<std::streamsize>(size));
  return path.string();
}

}  // namespace moe::fuzz
