#pragma once
// Records every token's routing during offline generation, addressed by (sequence, position).
// The serving path uses the capturer (src/capture/) instead, which indexes rows by KV slot.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/forward_batch.h"
#include "moe/routing_capture.h"

namespace moe {

class RoutingRecorder final : public RoutingCapture {
 public:
  RoutingRecorder(int num_sequences, int num_moe_layers, int top_k);

  // Must be called before each forward: maps the batch's token axis to (sequence, position).
  void begin_batch(const ForwardBatch& batch, const std::vector<int>& sequence_ids);
  void on_routing(int moe_layer, int64_t num_tokens, int top_k, const int32_t* ids, const float* weights) override;

  // [positions][num_moe_layers][top_k] of one sequence, positions 0 .. recorded - 1.
  const std::vector<int32_t>& ids(int sequence) const { return ids_[sequence]; }
  const std::vector<float>& weights(int sequence) const { return weights_[sequence]; }
  int64_t rows(int sequence) const;

 private:
  int num_moe_layers_;
  int top_k_;
  std::vector<std::pair<int, int32_t>> token_owner_;  // batch token -> (sequence, position)
  std::vector<std::vector<int32_t>> ids_;
  std::vector<std::vector<float>> weights_;
};

}  // namespace moe
