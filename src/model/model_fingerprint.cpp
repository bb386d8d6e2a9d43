#include "model/model_fingerprint.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <vector>

#include "common/error.h"
#include "model/safetensors.h"

namespace moe {
namespace {

constexpr size_t kSampleBytes = 4096;
constexpr size_t kSampleStride = size_t{1} << 20;

// XXH3 over a sequence of byte strings: fast (tens of GB/s), stable across builds and hosts (which
// std::hash is not), and with the quality a 64-bit identity needs.
class Hasher {
 public:
  Hasher() : state_(XXH3_createState(), &XXH3_freeState) {
    if (!state_ || XXH3_64bits_reset(state_.get()) != XXH_OK) throw Error("cannot start a checkpoint hash");
  }
  void bytes(const void* data, size_t size) { XXH3_64bits_update(state_.get(), data, size); }
  // Its length first, so "ab"+"c" differs from "a"+"bc".
  void text(const std::string& s) {
    const uint64_t size = s.size();
    bytes(&size, sizeof size);
    bytes(s.data(), s.size());
  }
  uint64_t value() const { return XXH3_64bits_digest(state_.get()); }

 private:
  std::unique_ptr<XXH3_state_t, XXH_errorcode (*)(XXH3_state_t*)> state_;
};

// Calls visit(begin, bytes) for each sample of a tensor of `size` bytes at `data`: all its bytes when
// small, else kSampleBytes at every kSampleStride and its last kSampleBytes.
template <class Visit>
void for_each_sample(const unsigned char* data, size_t size, Visit&& visit) {
  if (size <= 2 * kSampleBytes) {
    visit(data, size);
    return;
  }
  for (size_t at = 0; at + kSampleBytes < size; at += kSampleStride) visit(data + at, kSampleBytes);
  visit(data + size - kSampleBytes, kSampleBytes);
}

// Asks the kernel to read the pages of [begin, begin + bytes) of a mapping now, without waiting:
// all the samples' reads are then in flight at once instead of one page fault after another.
void read_ahead(const unsigned char* begin, size_t bytes) {
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t first = reinterpret_cast<uintptr_t>(begin) / page * page;
  ::madvise(reinterpret_cast<void*>(first), reinterpret_cast<uintptr_t>(begin) + bytes - first, MADV_WILLNEED);
}

// The header (names, dtypes, shapes, offsets), then every tensor's samples in name order.
void add_safetensors(Hasher& hash, const std::string& path) {
  const MappedFile file(path);
  // Only the sampled pages are read from disk: no readahead around each (which would read the whole
  // file when its page cache is cold).
  if (file.size() > 0) ::madvise(const_cast<unsigned char*>(file.data()), file.size(), MADV_RANDOM);
  const std::map<std::string, TensorInfo> tensors = parse_safetensors(file.data(), file.size(), path);
  uint64_t header_bytes = 0;
  std::memcpy(&header_bytes, file.data(), sizeof header_bytes);  // parse_safetensors checked it fits
  hash.bytes(file.data(), sizeof header_bytes + header_bytes);
  std::vector<std::pair<const unsigned char*, size_t>> spans;
  for (const auto& [name, info] : tensors) {
    size_t size = dtype_size(info.dtype);
    for (int64_t d : info.shape) size *= static_cast<size_t>(d);
    spans.emplace_back(static_cast<const unsigned char*>(info.data), size);
  }
  for (const auto& [data, size] : spans) for_each_sample(data, size, read_ahead);
  for (const auto& [data, size] : spans)
    for_each_sample(data, size, [&hash](const unsigned char* begin, size_t bytes) { hash.bytes(begin, bytes); });
}

std::string file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string() + " is not readable");
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

namespace {

// A hash begun with model_dir's config.json.
Hasher hash_of_config(const std::string& model_dir) {
  const std::filesystem::path config = std::filesystem::path(model_dir) / "config.json";
  if (!std::filesystem::is_regular_file(config)) throw Error(model_dir + " has no readable config.json");
  Hasher hash;
  hash.text(file_bytes(config));
  return hash;
}

}  // namespace

uint64_t dummy_weights_fingerprint(const std::string& model_dir, uint64_t seed) {
  Hasher hash = hash_of_config(model_dir);
  hash.text("dummy weights, seed " + std::to_string(seed));
  return hash.value();
}

uint64_t model_fingerprint(const std::string& model_dir) {
  namespace fs = std::filesystem;
  Hasher hash = hash_of_config(model_dir);
  std::vector<fs::path> files;
  for (const fs::directory_entry& entry : fs::directory_iterator(model_dir)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && (name.ends_with(".safetensors") || name.ends_with(".safetensors.index.json")))
      files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& file : files) {
    hash.text(file.filename().string());
    hash.text(std::to_string(fs::file_size(file)));
    if (file.extension() == ".safetensors")
      add_safetensors(hash, file.string());
    else
      hash.text(file_bytes(file));
  }
  return hash.value();
}

}  // namespace moe
