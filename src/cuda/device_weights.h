#pragma once
// Checkpoint tensors on the device: widened to float32 on the host (in their row-major order, not
// the CPU GEMM's tiles) and copied once, at load.
#include <cstdint>
#include <string>

#include "cuda/device_array.h"

namespace moe {
class Checkpoint;
}

namespace moe::cuda {

// A weight matrix [rows, cols]: torch Linear's [out_features, in_features].
struct DeviceMatrix {
  DeviceArray<float> data;
  int64_t rows = 0;
  int64_t cols = 0;
};

DeviceMatrix upload_matrix(const Checkpoint& ckpt, const std::string& name, int64_t rows, int64_t cols);
// A 1-D parameter (norm scale, bias) of exactly n elements.
DeviceArray<float> upload_vector(const Checkpoint& ckpt, const std::string& name, int64_t n);

}  // namespace moe::cuda
