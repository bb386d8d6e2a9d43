#pragma once
// CUDA graphs of decode steps, one per key: the padded batch size, the routing capture buffers
// the step writes (null when routing is not captured) and whether it ends in greedy picks.
// Everything else a replay must honour is read from device memory the graph points at (the batch's
// tables, the K/V pool, the activations), and is filled before each replay; so a flag that changes
// what a step does either changes the key (capture on/off, which of the two capture buffers, picks
// or logits) or is data, never a value frozen at capture time.
//
// A graph names the addresses it was captured with. When any device buffer has been allocated
// since (a larger step grew the activations, a new K/V pool, a new copy engine), the graph is
// dropped and the step runs uncaptured once before it is captured again, so that capture never
// meets a first-time allocation.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <map>
#include <tuple>

namespace moe::cuda {

class DecodeGraphs {
 public:
  // Padded batch sizes 1, 2, 4, ... up to this: decode batches above it run uncaptured.
  static constexpr int64_t kMaxBatch = 128;

  struct Key {
    int64_t batch;
    const void* capture_ids;
    const void* capture_weights;
    bool greedy_picks;  // the step ends in the device's greedy picks rather than with the logits
    bool operator<(const Key& o) const {
      return std::tie(batch, capture_ids, capture_weights, greedy_picks) <
             std::tie(o.batch, o.capture_ids, o.capture_weights, o.greedy_picks);
    }
  };

  DecodeGraphs() = default;
  DecodeGraphs(const DecodeGraphs&) = delete;
  DecodeGraphs& operator=(const DecodeGraphs&) = delete;
  ~DecodeGraphs();

  // The padded size of a decode batch of `tokens`, or 0 above kMaxBatch.
  static int64_t padded_batch(int64_t tokens);

  // Queues one step on `stream`: the key's graph when one is current; otherwise queue_step() itself,
  // captured into a new graph (then launched) when the same key already ran uncaptured with the
  // device's buffers as they are now.
  void run(const Key& key, cudaStream_t stream, const std::function<void()>& queue_step);

  // How many graphs were captured so far (a test's view of reuse).
  int64_t captures() const { return captures_; }

 private:
  struct Entry {
    cudaGraphExec_t graph = nullptr;
    uint64_t allocations = 0;  // device_allocation_count() when the graph was captured
    uint64_t warmed_at = ~uint64_t{0};  // device_allocation_count() after the last uncaptured run
  };
  static void destroy(Entry& entry);

  std::map<Key, Entry> entries_;
  int64_t captures_ = 0;
};

}  // namespace moe::cuda
