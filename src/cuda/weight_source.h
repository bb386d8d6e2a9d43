#pragma once
// Where the GPU model's weights come from: a checkpoint's files, or, for --load-format dummy, the
// random weights of a seed, made on the device from config.json alone (the same values as the CPU's
// Checkpoint::dummy and moe-make-checkpoint's checkpoint of that seed: random_checkpoint.h), so that
// a model larger than the host's memory or disk loads in seconds. Either way a tensor is read as the
// block one rank holds (model/tensor_shard.h): `rows` × `cols` of the whole [full_rows, full_cols]
// tensor; empty ranges mean all of it. Matrices keep the checkpoint's bf16 where it has it (dummy
// weights are bf16) and are float32 otherwise; vectors are float32.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cuda/device_weights.h"
#include "model/random_checkpoint.h"
#include "model/tensor_shard.h"

namespace moe {
class Checkpoint;
struct ModelConfig;
}  // namespace moe

namespace moe::cuda {

// A block of a matrix on the host as stored: bf16 bits, or float32 (f32 as stored, f16 widened).
struct HostBlock {
  std::vector<uint16_t> bf16;
  std::vector<float> f32;
  bool is_bf16() const { return !bf16.empty(); }
};

class WeightSource {
 public:
  // The checkpoint's tensors; it must outlive the source.
  explicit WeightSource(const Checkpoint& checkpoint);
  // Random bf16 weights of `config` made with `seed`.
  WeightSource(const ModelConfig& config, uint64_t seed);

  DeviceMatrix matrix(const std::string& name, int64_t full_rows, int64_t full_cols, IndexRange rows = {},
                      IndexRange cols = {}) const;
  // The same block on the host (a layout that reorders it before the upload).
  HostBlock host_block(const std::string& name, int64_t full_rows, int64_t full_cols, IndexRange rows = {},
                       IndexRange cols = {}) const;
  // Elements `part` of the 1-D parameter `name` of n elements, widened to float32.
  DeviceArray<float> vector(const std::string& name, int64_t n, IndexRange part = {}) const;
  std::vector<float> host_vector(const std::string& name, int64_t n, IndexRange part = {}) const;

 private:
  // The dummy tensor `name`, which must have `shape`.
  const RandomTensorRecipe& recipe(const std::string& name, const std::vector<int64_t>& shape) const;

  const Checkpoint* checkpoint_ = nullptr;  // null for dummy weights
  std::map<std::string, RandomTensorRecipe> recipes_;
  std::string dummy_name_;
};

}  // namespace moe::cuda
