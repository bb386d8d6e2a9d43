#include "capture/expert_load.h"

#include <algorithm>
#include <string>

#include "common/error.h"

namespace moe {

ExpertLoadCounter::ExpertLoadCounter(int num_moe_layers, int num_experts)
    : num_moe_layers_(num_moe_layers),
      num_experts_(num_experts),
      counts_(static_cast<size_t>(num_moe_layers) * num_experts, 0) {}

void ExpertLoadCounter::add(const int16_t* ids, int64_t num_rows, int top_k) {
  for (int64_t row = 0; row < num_rows; ++row) {
    for (int layer = 0; layer < num_moe_layers_; ++layer) {
      const int16_t* picked = ids + (row * num_moe_layers_ + layer) * top_k;
      uint64_t* layer_counts = counts_.data() + static_cast<size_t>(layer) * num_experts_;
      for (int k = 0; k < top_k; ++k) {
        if (picked[k] < 0 || picked[k] >= num_experts_)
          throw Error("expert load: expert id " + std::to_string(picked[k]) + " at layer " + std::to_string(layer) +
                      " is outside [0, " + std::to_string(num_experts_) + ")");
        ++layer_counts[picked[k]];
      }
    }
  }
  rows_counted_ += static_cast<uint64_t>(num_rows);
}

std::vector<std::vector<uint64_t>> ExpertLoadCounter::snapshot() const {
  std::vector<std::vector<uint64_t>> out(static_cast<size_t>(num_moe_layers_));
  for (int layer = 0; layer < num_moe_layers_; ++layer) {
    const auto begin = counts_.begin() + static_cast<std::ptrdiff_t>(layer) * num_experts_;
    out[layer].assign(begin, begin + num_experts_);
  }
  return out;
}

void ExpertLoadCounter::reset() {
  std::fill(counts_.begin(), counts_.end(), 0);
  rows_counted_ = 0;
}

}  // namespace moe
