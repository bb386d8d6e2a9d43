#pragma once
// Checkpoint tensors on the device. Matrices keep the checkpoint's bf16 where it has it (half the
// memory and the bytes a decode step reads; widening to float32 in a kernel is exact, so results
// are those of float32 weights) and are float32 otherwise (f32 as stored, f16 widened on the host).
// Vectors (norm scales, biases) are float32.
#include <cstdint>
#include <string>

#include "cuda/device_array.h"
#include "cuda/kernels.h"

namespace moe {
class Checkpoint;
}

namespace moe::cuda {

// A weight matrix [rows, cols]: torch Linear's [out_features, in_features], row-major. Exactly one
// of the two arrays holds it.
struct DeviceMatrix {
  DeviceArray<float> f32;
  DeviceArray<uint16_t> bf16;
  int64_t rows = 0;
  int64_t cols = 0;

  bool is_bf16() const { return !bf16.empty(); }
  WeightRef ref() const {
    return {is_bf16() ? static_cast<const void*>(bf16.data()) : static_cast<const void*>(f32.data()), is_bf16(),
            rows, cols};
  }
  int64_t bytes() const { return rows * cols * (is_bf16() ? 2 : 4); }
};

DeviceMatrix upload_matrix(const Checkpoint& ckpt, const std::string& name, int64_t rows, int64_t cols);
// A 1-D parameter (norm scale, bias) of exactly n elements.
DeviceArray<float> upload_vector(const Checkpoint& ckpt, const std::string& name, int64_t n);

}  // namespace moe::cuda
