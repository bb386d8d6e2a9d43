#pragma once
// Writes tensors into one .safetensors file (the layout the reader in safetensors.h maps).
// Used to make checkpoints: benchmark models and test fixtures.
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/weight.h"

namespace moe {

struct TensorToWrite {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;  // little-endian elements, exactly numel * dtype_size bytes
};

// Float values stored as `dtype` (bf16 rounds to nearest even).
TensorToWrite make_tensor(std::string name, DType dtype, std::vector<int64_t> shape, const std::vector<float>& values);

void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors);

}  // namespace moe
