#include "model/truncated_checkpoint.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <vector>

#include "common/error.h"
#include "common/json_file.h"
#include "model/model_config.h"
#include "model/random_checkpoint.h"
#include "model/safetensors.h"

namespace moe {
namespace {

// The checkpoint names of the tensors a model of `full`'s family needs beyond the first `cut`
// model's layers: the names its plan gives layers [cut.num_hidden_layers, full.num_hidden_layers).
std::set<std::string> dropped_tensors(const ModelConfig& full, const ModelConfig& cut) {
  std::set<std::string> dropped;
  for (const TensorSpec& spec : checkpoint_manifest(full)) dropped.insert(spec.name);
  for (const TensorSpec& spec : checkpoint_manifest(cut)) dropped.erase(spec.name);
  return dropped;
}

// Whether tensor `name` is one of `dropped`, or (GPTQ) a tensor of the module of one of them:
// "<module>.qweight" and its scales are named after the plan's "<module>.weight".
bool is_dropped(const std::string& name, const std::set<std::string>& dropped) {
  if (dropped.count(name)) return true;
  const size_t dot = name.rfind('.');
  return dot != std::string::npos && dropped.count(name.substr(0, dot) + ".weight");
}

nlohmann::json truncated_config(nlohmann::json config, int keep_layers) {
  const int layers = config.at("num_hidden_layers").get<int>();
  if (keep_layers < 1 || keep_layers > layers)
    throw Error("--keep-layers must be in [1, " + std::to_string(layers) + "] (the model's layers), got " +
                std::to_string(keep_layers));
  config["num_hidden_layers"] = keep_layers;
  // The source's next-token-prediction module follows its last layer, which the cut leaves out.
  if (config.contains("num_nextn_predict_layers")) config["num_nextn_predict_layers"] = 0;
  if (config.contains("mlp_only_layers") && config["mlp_only_layers"].is_array()) {
    nlohmann::json below = nlohmann::json::array();
    for (const auto& l : config["mlp_only_layers"])
      if (l.get<int>() < keep_layers) below.push_back(l);
    config["mlp_only_layers"] = below;
  }
  if (config.contains("layer_types") && config["layer_types"].is_array())
    config["layer_types"].erase(config["layer_types"].begin() + keep_layers, config["layer_types"].end());
  return config;
}

}  // namespace

void write_truncated_checkpoint(const std::string& source_dir, const std::string& out_dir, int keep_layers,
                                int64_t shard_bytes) {
  namespace fs = std::filesystem;
  const nlohmann::json config = truncated_config(read_json_file(source_dir + "/config.json"), keep_layers);
  if (fs::exists(out_dir) && fs::equivalent(out_dir, source_dir))
    throw Error("--out must not be the checkpoint being truncated (" + source_dir + ")");
  fs::create_directories(out_dir);
  std::ofstream(out_dir + "/config.json") << config.dump(2) << "\n";
  const std::set<std::string> dropped = dropped_tensors(load_model_config(source_dir), load_model_config(out_dir));
  // Opened as the loader opens it: the same index checks, shard names confined to the directory.
  const Checkpoint source = Checkpoint::open(source_dir);
  std::map<std::string, const TensorInfo*> tensors;  // by name: the written order
  for (const auto& [name, info] : source.tensors())
    if (!is_dropped(name, dropped)) tensors[name] = &info;
  const auto bytes_of = [](const TensorInfo& info) {
    int64_t n = static_cast<int64_t>(dtype_size(info.dtype));
    for (int64_t d : info.shape) n *= d;
    return n;
  };
  std::vector<const std::string*> names;
  std::vector<int64_t> sizes;
  for (const auto& [name, info] : tensors) {
    names.push_back(&name);
    sizes.push_back(bytes_of(*info));
  }
  const std::vector<std::vector<size_t>> shards = plan_shards(sizes, shard_bytes);
  nlohmann::json weight_map = nlohmann::json::object();
  for (size_t s = 0; s < shards.size(); ++s) {
    const std::string file = shard_file_name(s, shards.size());
    std::vector<TensorToWrite> shard;
    for (size_t i : shards[s]) {
      const TensorInfo& info = *tensors.at(*names[i]);
      const auto* data = static_cast<const uint8_t*>(info.data);
      shard.push_back({*names[i], info.dtype, info.shape, std::vector<uint8_t>(data, data + sizes[i])});
      weight_map[*names[i]] = file;
    }
    write_safetensors(out_dir + "/" + file, shard);
  }
  write_checkpoint_index(out_dir, weight_map);
  for (const char* name : {"generation_config.json", "tokenizer.json", "tokenizer_config.json",
                           "special_tokens_map.json", "vocab.json", "merges.txt"})
    if (fs::exists(fs::path(source_dir) / name))
      fs::copy_file(fs::path(source_dir) / name, fs::path(out_dir) / name, fs::copy_options::overwrite_existing);
}

}  // namespace moe
