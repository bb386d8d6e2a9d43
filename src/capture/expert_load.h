#pragma once
// Expert-load statistics: per MoE layer, how many tokens the router sent to each expert
// since start (or the last reset), counted from the routing rows every captured step produces. It
// counts forward work, so a token recomputed after preemption counts again and a prefix-cache hit
// does not. The input of load-balanced expert placement.
#include <cstdint>
#include <vector>

namespace moe {

class ExpertLoadCounter {
 public:
  ExpertLoadCounter(int num_moe_layers, int num_experts);

  // Counts rows [num_rows, num_moe_layers, top_k] of expert ids; an id outside [0, num_experts) is a
  // moe::Error (the rows are corrupt).
  void add(const int16_t* ids, int64_t num_rows, int top_k);
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
