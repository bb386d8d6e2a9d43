#include "serving/worker_settings.h"

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
  auto ends_with = [&](const std::string& suffix) {
    return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends_with(".safetensors") || ends_with(".safetensors.index.json");
}

std::string text(int64_t value) { return std::to_string(value); }
std::string text(bool on) { return on ? "on" : "off"; }

template <class T>
std::string both(const char* setting, T scheduler, T worker) {
  return std::string("the model worker's ") + setting + " is " + text(worker) + ", the scheduler's " + text(scheduler);
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

std::optional<std::string> settings_mismatch(const msg::WorkerSettings& expected, const msg::WorkerSettings& worker) {
  if (worker.model_fingerprint != expected.model_fingerprint)
    return "the model worker serves another model (its config.json or weight files differ from the scheduler's "
           "--model-path)";
  if (worker.kv_slots != expected.kv_slots)
    return both("KV slots (--max-total-tokens, plus one padding slot)", expected.kv_slots, worker.kv_slots);
  if (worker.max_batch_tokens != expected.max_batch_tokens)
    return both("tokens per step (--chunked-prefill-size)", expected.max_batch_tokens, worker.max_batch_tokens);
  if (worker.capture_routing != expected.capture_routing)
    return both("routed-experts capture (--enable-return-routed-experts)", expected.capture_routing, worker.capture_routing);
  if (worker.capture_router_weights != expected.capture_router_weights)
    return both("router-weights capture (--enable-return-router-weights)", expected.capture_router_weights,
                worker.capture_router_weights);
  if (worker.ep_size != expected.ep_size)
    return both<int64_t>("--ep-size", expected.ep_size, worker.ep_size);
  return std::nullopt;
}

}  // namespace moe
