#pragma once
// The scheduler's host cache of routing rows, indexed by KV slot: (num_slots, num_moe_layers, K).
// A token's row lives as long as its KV slot holds that token, so a prefix-cache hit finds the real
// routing of the cached tokens, and a row changes only when its slot is written again.
#include <cstdint>
#include <vector>

#include "capture/staged_routing.h"

namespace moe {

class RoutingHostCache {
 public:
  RoutingHostCache(int64_t num_slots, int num_moe_layers, int top_k, bool with_weights);

  int row_size() const { return num_moe_layers_ * top_k_; }
  int num_moe_layers() const { return num_moe_layers_; }
  int top_k() const { return top_k_; }
  bool with_weights() const { return !weights_.empty(); }
  int64_t bytes() const;
  int64_t bytes_per_token() const;

  // Row t of `staged` goes to slot token_slots[t].
  void store(const StagedRouting& staged, const std::vector<int32_t>& token_slots);
  // Rows of `slots`, in order, appended to ids_out (and weights_out when weights are kept).
  void gather(const int32_t* slots, int64_t count, std::vector<int16_t>& ids_out, std::vector<float>* weights_out) const;
  // Sets every id to `value` (tests prove no stale or unset row is ever returned).
  void fill(int16_t value);

 private:
  int64_t num_slots_;
  int num_moe_layers_;
  int top_k_;
  std::vector<int16_t> ids_;
  std::vector<float> weights_;
};

}  // namespace moe
