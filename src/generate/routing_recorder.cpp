#include "generate/routing_recorder.h"

namespace moe {

RoutingRecorder::RoutingRecorder(int num_sequences, int num_moe_layers, int top_k)
    : num_moe_layers_(num_moe_layers), top_k_(top_k), ids_(num_sequences), weights_(num_sequences) {}

void RoutingRecorder::begin_batch(const ForwardBatch& batch, const std::vector<int>& sequence_ids) {
  token_owner_.clear();
  int64_t t = 0;
  for (size_t s = 0; s < batch.sequences.size(); ++s) {
    const int seq = sequence_ids[s];
    for (int32_t i = 0; i < batch.sequences[s].num_new_tokens; ++i, ++t) {
      const int32_t pos = batch.positions[t];
      token_owner_.emplace_back(seq, pos);
      const size_t needed = static_cast<size_t>(pos + 1) * num_moe_layers_ * top_k_;
      if (ids_[seq].size() < needed) {
        ids_[seq].resize(needed, -1);
        weights_[seq].resize(needed, 0.0f);
      }
    }
  }
}

void RoutingRecorder::on_routing(int moe_layer, int64_t num_tokens, int top_k, const int32_t* ids,
                                 const float* weights) {
  for (int64_t t = 0; t < num_tokens; ++t) {
    const auto [seq, pos] = token_owner_[t];
    const size_t row = (static_cast<size_t>(pos) * num_moe_layers_ + moe_layer) * top_k;
    for (int k = 0; k < top_k; ++k) {
      ids_[seq][row + k] = ids[t * top_k + k];
      weights_[seq][row + k] = weights[t * top_k + k];
    }
  }
}

int64_t RoutingRecorder::rows(int sequence) const {
  return static_cast<int64_t>(ids_[sequence].size()) / (num_moe_layers_ * top_k_);
}

}  // namespace moe
