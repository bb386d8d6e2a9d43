#include "model/model_fingerprint.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "common/error.h"

namespace moe {
namespace {

// FNV-1a, 64 bits: stable across builds and hosts, which std::hash is not.
class Fnv1a {
 public:
  void add(const std::string& bytes) {
    for (unsigned char c : bytes) hash_ = (hash_ ^ c) * 0x100000001b3ull;
    hash_ = (hash_ ^ 0xff) * 0x100000001b3ull;  // a separator, so "ab"+"c" differs from "a"+"bc"
  }
  uint64_t value() const { return hash_; }

 private:
  uint64_t hash_ = 0xcbf29ce484222325ull;
};

bool is_weight_file(const std::string& name) {
  return name.ends_with(".safetensors") || name.ends_with(".safetensors.index.json");
}

}  // namespace

uint64_t model_fingerprint(const std::string& model_dir) {
  namespace fs = std::filesystem;
  std::ifstream config(fs::path(model_dir) / "config.json", std::ios::binary);
  if (!config) throw Error(model_dir + " has no readable config.json");
  Fnv1a hash;
  hash.add(std::string(std::istreambuf_iterator<char>(config), {}));
  std::vector<std::pair<std::string, uintmax_t>> files;
  for (const fs::directory_entry& entry : fs::directory_iterator(model_dir))
    if (entry.is_regular_file() && is_weight_file(entry.path().filename().string()))
      files.emplace_back(entry.path().filename().string(), entry.file_size());
  std::sort(files.begin(), files.end());
  for (const auto& [name, size] : files) {
    hash.add(name);
    hash.add(std::to_string(size));
  }
  return hash.value();
}

}  // namespace moe
