#include "model/checkpoint_overlay.h"

#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "model/safetensors.h"

namespace moe {
namespace {

namespace fs = std::filesystem;

constexpr const char* kIndexFile = "model.safetensors.index.json";

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

// A copy of a tensor mapped from a file, to write again.
TensorToWrite copy_of(const std::string& name, const TensorInfo& info) {
  size_t elements = 1;
  for (int64_t size : info.shape) elements *= static_cast<size_t>(size);
  const auto* data = static_cast<const uint8_t*>(info.data);
  return {name, info.dtype, info.shape, std::vector<uint8_t>(data, data + elements * dtype_size(info.dtype))};
}

}  // namespace

void write_checkpoint_overlay(const std::string& base_dir, const std::vector<TensorToWrite>& replacing,
                              const std::string& out_dir) {
  const Checkpoint base = Checkpoint::open(base_dir);
  std::set<std::string> replaced;
  for (const TensorToWrite& tensor : replacing) {
    if (!base.has(tensor.name)) throw Error("the model being served has no tensor named \"" + tensor.name + "\"");
    const std::vector<int64_t>& shape = base.tensor(tensor.name).shape;
    if (shape != tensor.shape)
      throw Error("tensor \"" + tensor.name + "\" has shape " + shape_text(shape) + " in the model being served; " +
                  shape_text(tensor.shape) + " was sent");
    replaced.insert(tensor.name);
  }
  fs::create_directories(out_dir);
  std::vector<TensorToWrite> tensors = replacing;
  nlohmann::json weight_map = nlohmann::json::object();
  for (const auto& [name, info] : base.tensors()) {
    const std::string file = fs::path(*info.file).filename().string();
    if (replaced.count(name)) {
      weight_map[name] = kOverlayTensorsFile;
    } else if (file == kOverlayTensorsFile) {
      tensors.push_back(copy_of(name, info));  // replaced by an earlier overlay: kept
      weight_map[name] = kOverlayTensorsFile;
    } else {
      weight_map[name] = file;
    }
  }
  for (const fs::directory_entry& entry : fs::directory_iterator(base_dir)) {
    const std::string name = entry.path().filename().string();
    if (name == kIndexFile || name == kOverlayTensorsFile || !fs::is_regular_file(entry.path())) continue;
    fs::create_symlink(fs::canonical(entry.path()), fs::path(out_dir) / name);
  }
  write_safetensors((fs::path(out_dir) / kOverlayTensorsFile).string(), tensors);
  write_checkpoint_index(out_dir, weight_map);
}

}  // namespace moe
