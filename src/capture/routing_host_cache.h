#pragma once
// What the host keeps of the routing rows that capture copies off the device: one forward step's
// rows as staged, the scheduler's cache of rows by KV slot, and the per-expert load counts.
#include <cstdint>
#include <vector>

namespace moe {

// The routing of one forward step, copied off the device: row t belongs to the step's token t.
struct StagedRouting {
  uint64_t step = 0;
  int64_t num_tokens = 0;
  int num_moe_layers = 0;
  int top_k = 0;
  std::vector<int16_t> ids;     // [num_tokens, num_moe_layers, top_k], token-major for the host cache
  std::vector<float> weights;   // same shape, empty unless weights were captured
};

// The scheduler's host cache of routing rows, indexed by KV slot: (num_slots, num_moe_layers, K).
// A token's row lives as long as its KV slot holds that token, so a prefix-cache hit finds the real
// routing of the cached tokens, and a row changes only when its slot is written again.
class RoutingHostCache {
 public:
  RoutingHostCache(int64_t num_slots, int num_moe_layers, int top_k, bool with_weights);

  int row_size() const { return num_moe_layers_ * top_k_; }
  int num_moe_layers() const { return num_moe_layers_; }
  int top_k() const { return top_k_; }
  bool with_weights() const { return !weights_.empty(); }
  int64_t bytes() const;
  int64_t bytes_per_token() const;

  // Row t of `staged` goes to slot token_slots[t], at MoE layers [first_layer, first_layer +
  // staged.num_moe_layers) of the slot's row (a pipeline stage's slice; the whole row by default).
  void store(const StagedRouting& staged, const std::vector<int32_t>& token_slots, int first_layer = 0);
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

// Expert-load statistics: per MoE layer, how many tokens the router sent to each expert
// since start (or the last reset), counted from the routing rows every captured step produces. It
// counts forward work, so a token recomputed after preemption counts again and a prefix-cache hit
// does not. The input of load-balanced expert placement.
class ExpertLoadCounter {
 public:
  ExpertLoadCounter(int num_moe_layers, int num_experts);

  // Counts rows [num_rows, num_layers, top_k] of expert ids of MoE layers [first_layer, first_layer +
  // num_layers) (a pipeline stage's slice); an id outside [0, num_experts) is a moe::Error (the rows
  // are corrupt). The slice holding layer 0 counts the rows (tokens).
  void add(const int16_t* ids, int64_t num_rows, int top_k, int first_layer, int num_layers);
  // counts[layer][expert] at this moment.
  std::vector<std::vector<uint64_t>> snapshot() const;
  // Rows counted so far (each row is one token at every MoE layer).
  uint64_t rows_counted() const { return rows_counted_; }
  // Zeroes every count and the row total: the start of a new window (per-interval load).
  void reset();

 private:
  int num_moe_layers_;
  int num_experts_;
  std::vector<uint64_t> counts_;  // [layer, expert]
  uint64_t rows_counted_ = 0;
};

}  // namespace moe
