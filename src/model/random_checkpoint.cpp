#include "model/random_checkpoint.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <cstdio>
#include <random>

#include "common/error.h"
#include "model/checkpoint_manifest.h"
#include "model/safetensors_writer.h"

namespace moe {
namespace {

// Uniform noise with the standard deviation each kind of tensor needs: unit-scale embeddings,
// 1/sqrt(fan_in) projections, and routers wide enough (3/sqrt(H)) that routing is decisive but
// spread over every expert.
std::vector<float> random_values(const TensorSpec& spec, uint64_t seed, size_t index) {
  int64_t count = 1;
  for (int64_t d : spec.shape) count *= d;
  const double fan_in = static_cast<double>(spec.shape.back());
  double mean = 0.0, stddev = 1.0;
  switch (spec.init) {
    case TensorSpec::Init::Embedding: stddev = 1.0; break;
    case TensorSpec::Init::Projection: stddev = 1.0 / std::sqrt(fan_in); break;
    case TensorSpec::Init::Router: stddev = 3.0 / std::sqrt(fan_in); break;
    case TensorSpec::Init::NormScale: mean = 1.0; stddev = 0.1; break;
    case TensorSpec::Init::Bias: stddev = 0.1; break;
  }
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + index);
  const double half_width = std::sqrt(3.0) * stddev;  // uniform [-a, a] has stddev a / sqrt(3)
  std::uniform_real_distribution<double> dist(mean - half_width, mean + half_width);
  std::vector<float> values(static_cast<size_t>(count));
  for (float& v : values) v = static_cast<float>(dist(rng));
  return values;
}

}  // namespace

void write_random_checkpoint(const nlohmann::json& config, const std::string& out_dir,
                             const RandomCheckpointOptions& options) {
  namespace fs = std::filesystem;
  fs::create_directories(out_dir);
  std::ofstream(out_dir + "/config.json") << config.dump(2) << "\n";
  const std::vector<TensorSpec> specs = checkpoint_manifest(load_model_config(out_dir));

  // Group tensors into shards of at most shard_bytes (a tensor larger than that gets its own).
  std::vector<std::vector<size_t>> shards(1);
  int64_t shard_size = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    int64_t bytes = static_cast<int64_t>(dtype_size(options.dtype));
    for (int64_t d : specs[i].shape) bytes *= d;
    if (!shards.back().empty() && shard_size + bytes > options.shard_bytes) {
      shards.emplace_back();
      shard_size = 0;
    }
    shards.back().push_back(i);
    shard_size += bytes;
  }
  nlohmann::json weight_map = nlohmann::json::object();
  for (size_t s = 0; s < shards.size(); ++s) {
    char name[64];
    std::snprintf(name, sizeof(name), "model-%05zu-of-%05zu.safetensors", s + 1, shards.size());
    std::vector<TensorToWrite> tensors;
    for (size_t i : shards[s]) {
      tensors.push_back(make_tensor(specs[i].name, options.dtype, specs[i].shape, random_values(specs[i], options.seed, i)));
      weight_map[specs[i].name] = name;
    }
    write_safetensors(out_dir + "/" + name, tensors);
  }
  std::ofstream(out_dir + "/model.safetensors.index.json")
      << nlohmann::json{{"metadata", nlohmann::json::object()}, {"weight_map", weight_map}}.dump(2) << "\n";
}

}  // namespace moe
