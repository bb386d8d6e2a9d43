#include "cuda/weight_source.h"

#include <cstring>

#include "common/error.h"
#include "cuda/kernels.h"
#include "kernels/weight.h"
#include "model/model_config.h"
#include "model/safetensors.h"

namespace moe::cuda {
namespace {

// An empty range is the whole dimension of n; any other must lie inside it.
IndexRange resolved(IndexRange range, int64_t n, const std::string& name) {
  if (range.count == 0) return {0, n};
  if (range.begin < 0 || range.begin + range.count > n)
    throw Error("tensor '" + name + "': a block [" + std::to_string(range.begin) + ", " +
                std::to_string(range.begin + range.count) + ") outside its " + std::to_string(n));
  return range;
}

// Rows `rows`, columns `cols` of a row-major [?, full_cols] array of T.
template <typename T>
std::vector<T> copy_block(const T* data, int64_t full_cols, IndexRange rows, IndexRange cols) {
  std::vector<T> block(static_cast<size_t>(rows.count * cols.count));
  for (int64_t r = 0; r < rows.count; ++r)
    std::memcpy(block.data() + r * cols.count, data + (rows.begin + r) * full_cols + cols.begin, cols.count * sizeof(T));
  return block;
}

}  // namespace

WeightSource::WeightSource(const Checkpoint& checkpoint) : checkpoint_(&checkpoint) {}

WeightSource::WeightSource(const ModelConfig& config, uint64_t seed)
    : recipes_(random_tensor_recipes(config, seed)), dummy_name_("dummy weights (seed " + std::to_string(seed) + ")") {}

const RandomTensorRecipe& WeightSource::recipe(const std::string& name, const std::vector<int64_t>& shape) const {
  const auto it = recipes_.find(name);
  if (it == recipes_.end()) throw Error(dummy_name_ + ": no tensor '" + name + "'");
  if (it->second.shape != shape) throw Error(dummy_name_ + ": tensor '" + name + "' has another shape");
  return it->second;
}

DeviceMatrix WeightSource::matrix(const std::string& name, int64_t full_rows, int64_t full_cols, IndexRange rows,
                                  IndexRange cols) const {
  rows = resolved(rows, full_rows, name);
  cols = resolved(cols, full_cols, name);
  DeviceMatrix matrix;
  matrix.rows = rows.count;
  matrix.cols = cols.count;
  const auto count = static_cast<size_t>(rows.count * cols.count);
  if (!checkpoint_) {
    const RandomTensorRecipe& made = recipe(name, {full_rows, full_cols});
    matrix.bf16 = DeviceArray<uint16_t>(count);
    random_bf16_block(made.rule, full_cols, rows.begin, cols.begin, rows.count, cols.count, matrix.bf16.data(), nullptr);
    check(cudaStreamSynchronize(nullptr), "random_bf16_block");
    return matrix;
  }
  const TensorInfo& tensor = checkpoint_->float_tensor(name, {full_rows, full_cols});
  if (tensor.dtype == DType::BF16 && cols.count == full_cols) {
    // Whole rows lie together in the mapped file: uploaded from there, no host copy.
    matrix.bf16 = DeviceArray<uint16_t>::from_host(static_cast<const uint16_t*>(tensor.data) + rows.begin * full_cols,
                                                   count);
    return matrix;
  }
  HostBlock block = host_block(name, full_rows, full_cols, rows, cols);
  if (block.is_bf16())
    matrix.bf16 = DeviceArray<uint16_t>::from_host(block.bf16);
  else
    matrix.f32 = DeviceArray<float>::from_host(block.f32);
  return matrix;
}

HostBlock WeightSource::host_block(const std::string& name, int64_t full_rows, int64_t full_cols, IndexRange rows,
                                   IndexRange cols) const {
  rows = resolved(rows, full_rows, name);
  cols = resolved(cols, full_cols, name);
  HostBlock block;
  if (!checkpoint_) {
    const RandomTensorRecipe& made = recipe(name, {full_rows, full_cols});
    block.bf16.resize(static_cast<size_t>(rows.count * cols.count));
    for (int64_t r = 0; r < rows.count; ++r)
      for (int64_t c = 0; c < cols.count; ++c)
        block.bf16[r * cols.count + c] =
            float_to_bf16(random_element(made.rule, (rows.begin + r) * full_cols + cols.begin + c));
    return block;
  }
  const TensorInfo& tensor = checkpoint_->float_tensor(name, {full_rows, full_cols});
  switch (tensor.dtype) {
    case DType::BF16: block.bf16 = copy_block(static_cast<const uint16_t*>(tensor.data), full_cols, rows, cols); break;
    case DType::F32: block.f32 = copy_block(static_cast<const float*>(tensor.data), full_cols, rows, cols); break;
    default: {
      const std::vector<uint16_t> halves = copy_block(static_cast<const uint16_t*>(tensor.data), full_cols, rows, cols);
      block.f32.reserve(halves.size());
      for (uint16_t h : halves) block.f32.push_back(f16_to_float(h));
    }
  }
  return block;
}

std::vector<float> WeightSource::host_vector(const std::string& name, int64_t n, IndexRange part) const {
  part = resolved(part, n, name);
  std::vector<float> values(static_cast<size_t>(part.count));
  if (!checkpoint_) {
    const RandomTensorRecipe& made = recipe(name, {n});
    // Stored in bf16, as the checkpoint of the seed stores it.
    for (int64_t i = 0; i < part.count; ++i)
      values[i] = bf16_to_float(float_to_bf16(random_element(made.rule, part.begin + i)));
    return values;
  }
  const std::vector<float> all = checkpoint_->floats(name, {n});
  std::copy_n(all.begin() + part.begin, part.count, values.begin());
  return values;
}

DeviceArray<float> WeightSource::vector(const std::string& name, int64_t n, IndexRange part) const {
  return DeviceArray<float>::from_host(host_vector(name, n, part));
}

}  // namespace moe::cuda
