#include "cuda/partial_rotary_layout.h"

#include <cstring>

#include "common/error.h"

namespace moe::cuda {
namespace {

// rows [n, width] with each head's (head_dim consecutive rows') order taken from source_dim.
template <typename T>
std::vector<T> reorder_rows(const T* rows, int64_t n, int64_t width, const std::vector<int>& source_dim) {
  const auto head_dim = static_cast<int64_t>(source_dim.size());
  std::vector<T> out(static_cast<size_t>(n * width));
  for (int64_t r = 0; r < n; ++r) {
    const int64_t head_start = r / head_dim * head_dim, source = head_start + source_dim[r % head_dim];
    std::memcpy(out.data() + r * width, rows + source * width, static_cast<size_t>(width) * sizeof(T));
  }
  return out;
}

}  // namespace

PartialRotaryLayout::PartialRotaryLayout(int head_dim, int rotary_dim)
    : head_dim_(head_dim), source_dim_(static_cast<size_t>(head_dim)) {
  if (rotary_dim % 2 != 0 || (head_dim - rotary_dim) % 2 != 0 || rotary_dim > head_dim)
    throw Error("CUDA attention: a rotary part of " + std::to_string(rotary_dim) + " of head_dim " +
                std::to_string(head_dim) + " must be even, as the rest");
  const int half = head_dim / 2, rotary_half = rotary_dim / 2, pass_half = (head_dim - rotary_dim) / 2;
  for (int i = 0; i < rotary_half; ++i) {
    source_dim_[i] = i;
    source_dim_[half + i] = rotary_half + i;
  }
  for (int m = 0; m < pass_half; ++m) {
    source_dim_[rotary_half + m] = rotary_dim + m;
    source_dim_[half + rotary_half + m] = rotary_dim + pass_half + m;
  }
}

std::vector<float> PartialRotaryLayout::padded_inv_freq(const std::vector<float>& inv_freq) const {
  std::vector<float> padded(static_cast<size_t>(head_dim_ / 2), 0.0f);
  std::copy(inv_freq.begin(), inv_freq.end(), padded.begin());
  return padded;
}

DeviceMatrix PartialRotaryLayout::upload_rows(const WeightSource& weights, const std::string& name, int64_t rows,
                                              int64_t cols, IndexRange part) const {
  const HostBlock block = weights.host_block(name, rows, cols, part);
  DeviceMatrix matrix;
  matrix.rows = part.count == 0 ? rows : part.count;
  matrix.cols = cols;
  if (block.is_bf16())
    matrix.bf16 = DeviceArray<uint16_t>::from_host(reorder_rows(block.bf16.data(), matrix.rows, cols, source_dim_));
  else
    matrix.f32 = DeviceArray<float>::from_host(reorder_rows(block.f32.data(), matrix.rows, cols, source_dim_));
  return matrix;
}

DeviceArray<float> PartialRotaryLayout::upload_vector(const WeightSource& weights, const std::string& name, int64_t n,
                                                      IndexRange part) const {
  const std::vector<float> values = weights.host_vector(name, n, part);
  return DeviceArray<float>::from_host(
      reorder_rows(values.data(), static_cast<int64_t>(values.size()), 1, source_dim_));
}

}  // namespace moe::cuda
