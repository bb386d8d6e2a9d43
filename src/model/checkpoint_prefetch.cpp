#include "model/checkpoint_prefetch.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <vector>

#include "common/error.h"

namespace moe {

void prefetch_checkpoint(const std::string& model_dir, const std::function<void(int64_t, int64_t)>& progress) {
  namespace fs = std::filesystem;
  // Loading the model names what is wrong with a directory that is not one.
  if (!fs::is_directory(model_dir)) return;
  std::vector<fs::path> files;
  int64_t total = 0;
  for (const auto& entry : fs::directory_iterator(model_dir)) {
    if (entry.path().extension() != ".safetensors") continue;
    files.push_back(entry.path());
    total += static_cast<int64_t>(entry.file_size());
  }
  std::sort(files.begin(), files.end());
  std::vector<char> chunk(8 << 20);
  int64_t done = 0;
  for (const fs::path& file : files) {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw Error("cannot read " + file.string());
    while (in.read(chunk.data(), static_cast<std::streamsize>(chunk.size())) || in.gcount() > 0) {
      done += in.gcount();
      progress(done, total);
    }
  }
}

}  // namespace moe
