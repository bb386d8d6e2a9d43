#pragma once
// One decoder layer's MoE block on the device, as model/moe_block.h on the CPU: the router's top-k
// (written by the router kernel straight into the capture's device buffer when routing is captured),
// the routed experts grouped by expert, the weighted sum per token in top-k order, and Qwen2-MoE's
// sigmoid-gated shared expert. Up to kGroupedOnDeviceTokens tokens the experts run as two grouped
// kernels that read each expert's row range on the device (no host round trip: such steps can be
// captured in a CUDA graph); larger steps read the row counts back and run each expert's GEMMs.
#include <cstdint>
#include <optional>
#include <vector>

#include "cuda/cuda_mlp.h"
#include "cuda/step_context.h"
#include "model/model_config.h"
#include "moe/routing_capture.h"

namespace moe {
class Architecture;
class Checkpoint;
}  // namespace moe

namespace moe::cuda {

class CudaMoeBlock {
 public:
  // Activations kept from step to step, shared by every MoE layer.
  struct Scratch {
    DeviceArray<float> router_logits;             // [T, E]
    DeviceArray<int32_t> ids;                     // [T, K]
    DeviceArray<float> weights;                   // [T, K]
    DeviceArray<int32_t> offsets, cursor;         // [E + 1], [E]
    DeviceArray<int32_t> active;                  // [E], the experts with rows, then -1
    DeviceArray<int32_t> order, slot_of_pair;     // [T·K]
    DeviceArray<float> gathered, expert_out;      // [T·K, H], rows grouped by expert
    DeviceArray<float> shared, shared_gate;       // [T, H], [T]
    std::vector<int32_t> host_offsets;            // [E + 1], read back each step
  };

  static constexpr int64_t kGroupedOnDeviceTokens = 256;
  // Up to this many tokens one block routes and groups them in a single launch; larger steps route
  // with a warp per token over many blocks (one block of 512 threads took 30 us for batch 32's
  // routing on the H100, the four launches of the spread path ~22).
  static constexpr int64_t kFusedRoutingTokens = 16;

  CudaMoeBlock(const Checkpoint& ckpt, const ModelConfig& config, const Architecture& arch, int layer);
  // out[T, H] = moe(x[T, H]); out is overwritten. With `capture`, the router also writes the layer's
  // rows into the capture's device buffer (no copy to the host here). Above kGroupedOnDeviceTokens,
  // waits for the device once, to learn how many rows each expert got.
  void forward(const float* x, const StepContext& step, RoutingCapture* capture, Scratch& scratch,
               CudaMlp::Scratch& mlp_scratch, float* out) const;

 private:
  // The capture's device block for this layer; a capture without one, or too small, is a moe::Error.
  DeviceRoutingRows capture_rows(RoutingCapture* capture, int64_t num_tokens) const;

  int moe_index_;
  int num_experts_;
  int top_k_;
  bool normalize_top_k_;
  int64_t hidden_, expert_width_;
  DeviceMatrix router_;  // [E, H]
  std::vector<CudaMlp> experts_;
  // Device arrays of the experts' gate/up/down pointers, and the grouped kernels' view of them.
  DeviceArray<const void*> gate_table_, up_table_, down_table_;
  ExpertTables tables_{};
  std::optional<CudaMlp> shared_expert_;
  DeviceMatrix shared_expert_gate_;  // [1, H]
};

}  // namespace moe::cuda
