#pragma once
// Reader of Hugging Face safetensors checkpoints: one file, or shards listed in
// model.safetensors.index.json. Tensors are memory-mapped; half-precision matrices are copied once,
// tiled for the GEMM (kernels/weight_tiling.h), when first asked for.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/weight.h"
#include "model/mapped_file.h"
#include "model/weight_arena.h"

namespace moe {

struct TensorInfo {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  const void* data = nullptr;
  const std::string* file = nullptr;  // the shard holding it, for error messages
};

// One .safetensors file: validates the header and every tensor's extent when opened.
class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::string& path);
  const std::map<std::string, TensorInfo>& tensors() const { return tensors_; }
  const std::string& path() const { return file_.path(); }

 private:
  MappedFile file_;
  std::map<std::string, TensorInfo> tensors_;
};

class Checkpoint {
 public:
  // DIR/model.safetensors.index.json when present, else DIR/model.safetensors.
  static Checkpoint open(const std::string& model_dir);

  bool has(const std::string& name) const { return tensors_.count(name) != 0; }
  const TensorInfo& tensor(const std::string& name) const;
  // A 2-D weight of exactly [rows, cols]; anything else is an error naming file and tensor. F32
  // matrices are viewed where they lie; BF16 and F16 ones are tiled on the first call (the same
  // tiled copy serves every later call, e.g. a tied embedding and lm_head).
  WeightView matrix(const std::string& name, int64_t rows, int64_t cols) const;
  // A 1-D parameter of exactly n elements, widened to float32.
  VectorParam vector(const std::string& name, int64_t n) const;
  // Any tensor of exactly `shape`, widened to float32 in its row-major order (what a device
  // upload copies: no tiling).
  std::vector<float> floats(const std::string& name, const std::vector<int64_t>& shape) const;

 private:
  // The tensor `name`, which must have exactly `shape`; anything else is an error naming file and tensor.
  const TensorInfo& tensor_of_shape(const std::string& name, const std::vector<int64_t>& shape) const;

  std::string dir_;
  std::vector<std::shared_ptr<SafetensorsFile>> files_;
  std::map<std::string, TensorInfo> tensors_;
  // The tiled copies, shared by copies of this checkpoint; layers may load on several threads.
  struct TiledMatrices {
    std::mutex mutex;
    WeightArena arena;
    std::map<std::string, WeightView> views;
  };
  std::shared_ptr<TiledMatrices> tiled_ = std::make_shared<TiledMatrices>();
};

}  // namespace moe
