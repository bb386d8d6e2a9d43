#pragma once
// How a step's routing gets from the forward to host memory: two capture buffers alternate between
// steps by parity, and while the forward of step n+1 fills one, the copy of step n reads the other.
// Where the buffers live decides the engine: host memory and a copy thread for the CPU model
// (ThreadCopyEngine), device memory and a copy stream for a GPU model (cuda::CudaCopyEngine).
#include <cstdint>
#include <vector>

#include "capture/routing_host_cache.h"
#include "moe/routing_capture.h"

namespace moe {

// Each of the two buffers: (num_moe_layers, max_tokens, top_k) int16 ids, layer-major so that MoE
// layer l writes one contiguous (max_tokens, top_k) block right after its top-k; float32 weights of
// the same shape when router weights are captured.
struct RoutingBufferShape {
  int num_moe_layers = 0;
  int64_t max_tokens = 0;
  int top_k = 0;
  bool with_weights = false;

  int64_t elements() const { return num_moe_layers * max_tokens * top_k; }
  // One buffer's bytes, ids and weights.
  int64_t bytes() const;
};

// Staged rows [num_tokens, L, K] (token-major, as the host cache stores them) from layer-major rows
// (layer l's row t at ids[l * layer_stride + t * K]); weights likewise when not null.
StagedRouting stage_token_major(uint64_t step, int64_t num_tokens, const RoutingBufferShape& shape,
                                const int16_t* ids, const float* weights, int64_t layer_stride);

class CopyEngine {
 public:
  explicit CopyEngine(const RoutingBufferShape& shape) : shape_(shape) {}
  virtual ~CopyEngine() = default;
  CopyEngine(const CopyEngine&) = delete;
  CopyEngine& operator=(const CopyEngine&) = delete;

  const RoutingBufferShape& shape() const { return shape_; }
  // Buffer `index` (0 or 1) as the forward writes it.
  virtual RoutingCapture& buffer(int index) = 0;
  // Before a forward writes buffer `index`: the writes must not overtake the copy still reading it.
  // The CPU engine blocks until that copy has finished; a GPU engine has the device wait instead.
  virtual void prepare_write(int index) = 0;
  // After step `step`'s forward wrote rows 0..num_tokens-1 of buffer `index`: starts their copy and
  // returns at once.
  virtual void start(int index, uint64_t step, int64_t num_tokens) = 0;
  // The copies finished so far, in step order; never blocks.
  virtual std::vector<StagedRouting> take_completed() = 0;
  // Blocks until every started copy has finished, then returns all unclaimed ones in step order.
  virtual std::vector<StagedRouting> drain() = 0;

 private:
  RoutingBufferShape shape_;
};

}  // namespace moe
