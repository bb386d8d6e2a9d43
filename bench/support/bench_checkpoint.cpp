#include "support/bench_checkpoint.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>

#include "common/json_file.h"
#include "model/random_checkpoint.h"

namespace moe::bench {
namespace {

std::vector<std::string>& temporary_dirs() {
  static std::vector<std::string> dirs;
  return dirs;
}

}  // namespace

nlohmann::json benchmark_config(int layers) {
  nlohmann::json config = read_json_file(MOE_BENCH_CONFIG_DIR "/qwen3-moe-small.json");
  if (layers > 0) config["num_hidden_layers"] = layers;
  return config;
}

const std::string& benchmark_checkpoint(int layers) {
  static std::map<int, std::string> made;
  if (const char* dir = std::getenv("MOE_BENCH_MODEL")) {
    // Made here once when the directory holds no checkpoint yet (a machine without moe-make-checkpoint).
    if (!made.count(-1) && !std::filesystem::exists(std::filesystem::path(dir) / "config.json"))
      write_random_checkpoint(benchmark_config(), dir, RandomCheckpointOptions{});
    return made.emplace(-1, dir).first->second;
  }
  auto it = made.find(layers);
  if (it != made.end()) return it->second;
  const auto path = std::filesystem::temp_directory_path() /
                    ("moe_bench_" + std::to_string(::getpid()) + "_" + std::to_string(layers));
  write_random_checkpoint(benchmark_config(layers), path.string(), RandomCheckpointOptions{});
  if (temporary_dirs().empty())
    std::atexit([] {
      for (const std::string& dir : temporary_dirs()) std::filesystem::remove_all(dir);
    });
  temporary_dirs().push_back(path.string());
  return made.emplace(layers, path.string()).first->second;
}

}  // namespace moe::bench
