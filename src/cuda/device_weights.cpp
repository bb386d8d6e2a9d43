#include "cuda/device_weights.h"

#include "model/safetensors.h"

namespace moe::cuda {

DeviceMatrix upload_matrix(const Checkpoint& ckpt, const std::string& name, int64_t rows, int64_t cols) {
  return {DeviceArray<float>::from_host(ckpt.floats(name, {rows, cols})), rows, cols};
}

DeviceArray<float> upload_vector(const Checkpoint& ckpt, const std::string& name, int64_t n) {
  return DeviceArray<float>::from_host(ckpt.floats(name, {n}));
}

}  // namespace moe::cuda
