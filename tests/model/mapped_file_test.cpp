// MappedFile's pages dropped after a copy: the process stops holding them, and reading them again
// still gives the file's bytes.
#include "model/safetensors.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace moe {
namespace {

namespace fs = std::filesystem;

// The resident kilobytes of the mapping that starts at `start`, from /proc/self/smaps.
int64_t resident_kib(const void* start) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool in_mapping = false;
  while (std::getline(smaps, line)) {
    uintptr_t begin = 0, end = 0;
    char dash = 0;
    std::istringstream range(line);
    if (range >> std::hex >> begin >> dash >> end && dash == '-') {
      in_mapping = begin == reinterpret_cast<uintptr_t>(start);
      continue;
    }
    if (in_mapping && line.rfind("Rss:", 0) == 0) return std::stoll(line.substr(4));
  }
  return -1;
}

TEST(MappedFile, DroppedPagesLeaveTheResidentSetAndReadBackUnchanged) {
  const fs::path path = fs::temp_directory_path() / ("moe_mapped_" + std::to_string(::getpid()));
  const size_t size = 64 * 4096;
  {
    std::ofstream out(path, std::ios::binary);
    for (size_t i = 0; i < size; ++i) out.put(static_cast<char>(i * 7 % 251));
  }
  {
    const MappedFile file(path.string());
    int64_t sum = 0;
    for (size_t i = 0; i < size; i += 4096) sum += file.data()[i];
    ASSERT_GT(sum, 0);
    const int64_t before = resident_kib(file.data());
    ASSERT_GE(before, 256) << "all 64 pages were read";
    drop_mapped_pages(file.data() + 100, size - 200);  // whole pages only: 62 of the 64
    EXPECT_LE(resident_kib(file.data()), before - 62 * 4);
    for (size_t i = 0; i < size; ++i) ASSERT_EQ(file.data()[i], static_cast<unsigned char>(i * 7 % 251)) << i;
  }
  fs::remove(path);
}

}  // namespace
}  // namespace moe
