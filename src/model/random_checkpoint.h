#pragma once
// Writes checkpoints: tensors into one .safetensors file (the layout the reader in safetensors.h
// maps), and whole random-weight checkpoints in the Hugging Face hub layout (config.json, sharded
// safetensors, model.safetensors.index.json) for any supported architecture, where the same seed
// gives the same bytes. Used to make benchmark models and test fixtures.
#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "kernels/weight.h"
#include "model/random_element.h"

namespace moe {

struct ModelConfig;

struct TensorToWrite {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;  // little-endian elements, exactly numel * dtype_size bytes
};

// Float values stored as `dtype` (bf16 rounds to nearest even).
TensorToWrite make_tensor(std::string name, DType dtype, std::vector<int64_t> shape, const std::vector<float>& values);

// Integers stored as `dtype` (I64, or Bool: 1 for non-zero), one-dimensional.
TensorToWrite make_integer_tensor(std::string name, DType dtype, const std::vector<int64_t>& values);

void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors);

// Sharding in the hub layout: tensors of these byte sizes, in order, grouped into shards of at most
// shard_bytes (a larger tensor gets its own); shard s of count's file name; the index naming each
// tensor's shard (weight_map: tensor name -> file name).
std::vector<std::vector<size_t>> plan_shards(const std::vector<int64_t>& tensor_bytes, int64_t shard_bytes);
std::string shard_file_name(size_t shard, size_t count);
void write_checkpoint_index(const std::string& out_dir, const nlohmann::json& weight_map);

// Every tensor a checkpoint of a given config holds, with its shape and how a random initialisation
// should scale it. Used to write random-weight checkpoints (benchmarks, tests).
struct TensorSpec {
  enum class Init { Embedding, Projection, Router, NormScale, Bias };
  std::string name;
  std::vector<int64_t> shape;
  Init init = Init::Projection;
  // An attention, expert or MLP matrix: what GPTQ checkpoints quantize (the engine also quantizes
  // lm_head at load; routers, embeddings and norms stay as they are).
  bool projection = false;
};

std::vector<TensorSpec> checkpoint_manifest(const ModelConfig& config);

struct RandomCheckpointOptions {
  uint64_t seed = 0;
  DType dtype = DType::BF16;  // of every float tensor
  int64_t shard_bytes = int64_t{2} << 30;
  // 4 or 8: the projections (TensorSpec::projection) written as a symmetric GPTQ checkpoint of that
  // many bits (docs/quantization.md), random integers with scales that give each matrix the float
  // initialisation's standard deviation; config.json gets the quantization_config. 0: float.
  int gptq_bits = 0;
  int64_t gptq_group_size = 128;
};

void write_random_checkpoint(const nlohmann::json& config, const std::string& out_dir,
                             const RandomCheckpointOptions& options);

// In memory, the float tensors write_random_checkpoint would write for `config` (the same bytes for the
// same seed and dtype; gptq_bits must be 0): the weights of --load-format dummy.
std::vector<TensorToWrite> random_tensors(const ModelConfig& config, const RandomCheckpointOptions& options);
// How write_random_checkpoint makes each float tensor of `config`'s checkpoint with `seed` (no GPTQ):
// element i (row-major) is random_element(rule, i), rounded to the checkpoint's dtype. The GPU's
// --load-format dummy makes its weights on the device from these.
struct RandomTensorRecipe {
  std::vector<int64_t> shape;
  RandomElementRule rule;
};
std::map<std::string, RandomTensorRecipe> random_tensor_recipes(const ModelConfig& config, uint64_t seed);
// The same for the tensors of any manifest (tensor i's bytes depend on the seed, i and its spec).
std::vector<TensorToWrite> random_tensors_of(const std::vector<TensorSpec>& manifest,
                                             const RandomCheckpointOptions& options);

}  // namespace moe
