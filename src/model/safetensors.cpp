#include "model/safetensors.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/json_file.h"
#include "kernels/weight_tiling.h"

namespace moe {
namespace {

DType parse_dtype(const std::string& name, const std::string& file, const std::string& tensor) {
  if (name == "BF16") return DType::BF16;
  if (name == "F16") return DType::F16;
  if (name == "F32") return DType::F32;
  throw Error(file + ": tensor '" + tensor + "' has dtype " + name + "; supported: BF16, F16, F32");
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace

SafetensorsFile::SafetensorsFile(const std::string& path) : file_(path) {
  const size_t size = file_.size();
  if (size < 8) throw Error(path + ": truncated safetensors file (" + std::to_string(size) + " bytes)");
  uint64_t header_len = 0;
  std::memcpy(&header_len, file_.data(), 8);  // little-endian on every platform we build for
  if (header_len > size - 8)
    throw Error(path + ": truncated safetensors file: header of " + std::to_string(header_len) +
                " bytes does not fit in " + std::to_string(size) + " bytes");
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(file_.data() + 8, file_.data() + 8 + header_len);
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(path + ": safetensors header is not JSON: " + e.what());
  }
  if (!header.is_object()) throw Error(path + ": safetensors header is not a JSON object");
  const unsigned char* body = file_.data() + 8 + header_len;
  const uint64_t body_size = size - 8 - header_len;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") continue;
    try {
      TensorInfo info;
      info.dtype = parse_dtype(entry.at("dtype").get<std::string>(), path, name);
      info.shape = entry.at("shape").get<std::vector<int64_t>>();
      const auto offsets = entry.at("data_offsets").get<std::vector<uint64_t>>();
      uint64_t count = 1;
      for (int64_t d : info.shape) {
        if (d < 0) throw Error(path + ": tensor '" + name + "' has a negative dimension");
        count *= static_cast<uint64_t>(d);
      }
      if (offsets.size() != 2 || offsets[0] > offsets[1])
        throw Error(path + ": tensor '" + name + "' has malformed data_offsets");
      if (offsets[1] - offsets[0] != count * dtype_size(info.dtype))
        throw Error(path + ": tensor '" + name + "' of shape " + shape_string(info.shape) + " needs " +
                    std::to_string(count * dtype_size(info.dtype)) + " bytes but its data_offsets span " +
                    std::to_string(offsets[1] - offsets[0]));
      if (offsets[1] > body_size)
        throw Error(path + ": truncated: tensor '" + name + "' ends at byte " + std::to_string(offsets[1]) +
                    " of a data section of " + std::to_string(body_size) + " bytes");
      info.data = body + offsets[0];
      info.file = &file_.path();
      tensors_.emplace(name, std::move(info));
    } catch (const nlohmann::json::exception& e) {
      throw Error(path + ": tensor '" + name + "' has a malformed header entry: " + e.what());
    }
  }
}

Checkpoint Checkpoint::open(const std::string& model_dir) {
  Checkpoint ckpt;
  ckpt.dir_ = model_dir;
  const std::string index_path = model_dir + "/model.safetensors.index.json";
  std::vector<std::string> shard_names;
  std::map<std::string, std::string> weight_map;
  if (file_exists(index_path)) {
    const auto index = read_json_file(index_path);
    if (!index.contains("weight_map") || !index["weight_map"].is_object())
      throw Error(index_path + ": no weight_map object");
    for (const auto& [tensor, shard] : index["weight_map"].items()) {
      weight_map[tensor] = shard.get<std::string>();
      if (std::find(shard_names.begin(), shard_names.end(), weight_map[tensor]) == shard_names.end())
        shard_names.push_back(weight_map[tensor]);
    }
  } else if (file_exists(model_dir + "/model.safetensors")) {
    shard_names.push_back("model.safetensors");
  } else {
    throw Error(model_dir + ": no model.safetensors or model.safetensors.index.json");
  }
  for (const auto& shard : shard_names) {
    auto file = std::make_shared<SafetensorsFile>(model_dir + "/" + shard);
    for (const auto& [name, info] : file->tensors()) ckpt.tensors_[name] = info;
    ckpt.files_.push_back(std::move(file));
  }
  for (const auto& [tensor, shard] : weight_map)
    if (!ckpt.tensors_.count(tensor))
      throw Error(model_dir + "/" + shard + ": tensor '" + tensor + "' is listed in the index but missing");
  return ckpt;
}

const TensorInfo& Checkpoint::tensor(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) throw Error(dir_ + ": missing tensor '" + name + "'");
  return it->second;
}

const TensorInfo& Checkpoint::tensor_of_shape(const std::string& name, const std::vector<int64_t>& shape) const {
  const TensorInfo& t = tensor(name);
  if (t.shape != shape)
    throw Error(*t.file + ": tensor '" + name + "' has shape " + shape_string(t.shape) + ", expected " +
                shape_string(shape));
  return t;
}

WeightView Checkpoint::matrix(const std::string& name, int64_t rows, int64_t cols) const {
  const TensorInfo& t = tensor_of_shape(name, {rows, cols});
  const WeightView row_major{t.data, t.dtype, rows, cols};
  if (t.dtype == DType::F32) return row_major;
  std::lock_guard lock(tiled_->mutex);
  auto [it, added] = tiled_->views.try_emplace(name);
  if (added) {
    it->second = weight_tiling::tile_into(row_major, tiled_->arena.allocate(weight_tiling::tiled_elements(rows, cols)));
    // The kernels read the copy; the file's pages need not stay in this process's resident set.
    drop_mapped_pages(t.data, static_cast<size_t>(rows * cols) * dtype_size(t.dtype));
  }
  return it->second;
}

VectorParam Checkpoint::vector(const std::string& name, int64_t n) const { return floats(name, {n}); }

std::vector<float> Checkpoint::floats(const std::string& name, const std::vector<int64_t>& shape) const {
  const TensorInfo& t = tensor_of_shape(name, shape);
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  // The whole tensor read as one row-major row: row_to_float widens any dtype.
  const WeightView as_row{t.data, t.dtype, 1, count};
  std::vector<float> out(static_cast<size_t>(count));
  as_row.row_to_float(0, out.data());
  return out;
}

}  // namespace moe
