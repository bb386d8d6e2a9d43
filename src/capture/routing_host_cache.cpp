#include "capture/routing_host_cache.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "common/error.h"

namespace moe {

RoutingHostCache::RoutingHostCache(int64_t num_slots, int num_moe_layers, int top_k, bool with_weights)
    : num_slots_(num_slots),
      num_moe_layers_(num_moe_layers),
      top_k_(top_k),
      ids_(static_cast<size_t>(num_slots * num_moe_layers * top_k)) {
  if (with_weights) weights_.resize(ids_.size());
}

int64_t RoutingHostCache::bytes() const {
  return static_cast<int64_t>(ids_.size() * sizeof(int16_t) + weights_.size() * sizeof(float));
}

int64_t RoutingHostCache::bytes_per_token() const { return num_slots_ ? bytes() / num_slots_ : 0; }

void RoutingHostCache::store(const StagedRouting& staged, const std::vector<int32_t>& token_slots, int first_layer) {
  if (first_layer < 0 || staged.num_moe_layers < 1 || first_layer + staged.num_moe_layers > num_moe_layers_ ||
      staged.top_k != top_k_ ||
      static_cast<int64_t>(token_slots.size()) != staged.num_tokens)
    throw Error("routing host cache: staged rows of step " + std::to_string(staged.step) + " do not match");
  if (!weights_.empty() && staged.weights.empty())
    throw Error("routing host cache: step " + std::to_string(staged.step) +
                " came without router weights (start the worker with --enable-return-router-weights too)");
  const size_t row = static_cast<size_t>(row_size());
  const size_t slice = static_cast<size_t>(staged.num_moe_layers) * top_k_;
  const size_t offset = static_cast<size_t>(first_layer) * top_k_;
  for (int64_t t = 0; t < staged.num_tokens; ++t) {
    const int32_t slot = token_slots[t];
    if (slot < 0 || slot >= num_slots_) throw Error("routing host cache: slot " + std::to_string(slot) + " out of range");
    std::memcpy(ids_.data() + slot * row + offset, staged.ids.data() + t * slice, slice * sizeof(int16_t));
    if (!weights_.empty())
      std::memcpy(weights_.data() + slot * row + offset, staged.weights.data() + t * slice, slice * sizeof(float));
  }
}

void RoutingHostCache::gather(const int32_t* slots, int64_t count, std::vector<int16_t>& ids_out,
                              std::vector<float>* weights_out) const {
  const size_t row = static_cast<size_t>(row_size());
  for (int64_t i = 0; i < count; ++i) {
    const int16_t* src = ids_.data() + static_cast<size_t>(slots[i]) * row;
    ids_out.insert(ids_out.end(), src, src + row);
    if (weights_out && !weights_.empty()) {
      const float* w = weights_.data() + static_cast<size_t>(slots[i]) * row;
      weights_out->insert(weights_out->end(), w, w + row);
    }
  }
}

void RoutingHostCache::fill(int16_t value) { std::fill(ids_.begin(), ids_.end(), value); }

ExpertLoadCounter::ExpertLoadCounter(int num_moe_layers, int num_experts)
    : num_moe_layers_(num_moe_layers),
      num_experts_(num_experts),
      counts_(static_cast<size_t>(num_moe_layers) * num_experts, 0) {}

void ExpertLoadCounter::add(const int16_t* ids, int64_t num_rows, int top_k, int first_layer, int num_layers) {
  if (first_layer < 0 || first_layer + num_layers > num_moe_layers_)
    throw Error("expert load: MoE layers [" + std::to_string(first_layer) + ", " + std::to_string(first_layer + num_layers) +
                ") are not layers of this model");
  for (int64_t row = 0; row < num_rows; ++row) {
    for (int slice_layer = 0; slice_layer < num_layers; ++slice_layer) {
      const int layer = first_layer + slice_layer;
      const int16_t* picked = ids + (row * num_layers + slice_layer) * top_k;
      uint64_t* layer_counts = counts_.data() + static_cast<size_t>(layer) * num_experts_;
      for (int k = 0; k < top_k; ++k) {
        if (picked[k] < 0 || picked[k] >= num_experts_)
          throw Error("expert load: expert id " + std::to_string(picked[k]) + " at layer " + std::to_string(layer) +
                      " is outside [0, " + std::to_string(num_experts_) + ")");
        ++layer_counts[picked[k]];
      }
    }
  }
  if (first_layer == 0) rows_counted_ += static_cast<uint64_t>(num_rows);
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
