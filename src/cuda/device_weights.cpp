#include "cuda/device_weights.h"

#include "model/safetensors.h"

namespace moe::cuda {

DeviceMatrix upload_matrix(const Checkpoint& ckpt, const std::string& name, int64_t rows, int64_t cols) {
  DeviceMatrix matrix;
  matrix.rows = rows;
  matrix.cols = cols;
  const TensorInfo& tensor = ckpt.tensor_of_shape(name, {rows, cols});
  if (tensor.dtype == DType::BF16) {
    // Straight from the mapped file: the bits are the device's, no host copy needed.
    matrix.bf16 = DeviceArray<uint16_t>::from_host(static_cast<const uint16_t*>(tensor.data),
                                                   static_cast<size_t>(rows * cols));
  } else {
    matrix.f32 = DeviceArray<float>::from_host(ckpt.floats(name, {rows, cols}));
  }
  return matrix;
}

DeviceArray<float> upload_vector(const Checkpoint& ckpt, const std::string& name, int64_t n) {
  return DeviceArray<float>::from_host(ckpt.floats(name, {n}));
}

}  // namespace moe::cuda
