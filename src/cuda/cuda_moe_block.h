#pragma once
// One decoder layer's MoE block on the device, as model/moe_block.h on the CPU: the router's top-k
// (reported to the capture hook), the routed experts grouped by expert (each runs its SwiGLU as
// GEMMs over the rows routed to it), the weighted sum per token in top-k order, and Qwen2-MoE's
// sigmoid-gated shared expert.
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
    DeviceArray<int32_t> order, slot_of_pair;     // [T·K]
    DeviceArray<float> gathered, expert_out;      // [T·K, H], rows grouped by expert
    DeviceArray<float> shared, shared_gate;       // [T, H], [T]
    std::vector<int32_t> host_offsets, host_ids;  // what the host reads back each step
    std::vector<float> host_weights;
  };

  CudaMoeBlock(const Checkpoint& ckpt, const ModelConfig& config, const Architecture& arch, int layer);
  // out[T, H] = moe(x[T, H]); out is overwritten. Waits for the device once, to learn how many
  // rows each expert got (and, with a capture hook, to hand it the routing on the host).
  void forward(const float* x, const StepContext& step, RoutingCapture* capture, Scratch& scratch,
               CudaMlp::Scratch& mlp_scratch, float* out) const;

 private:
  // Copies the expert offsets (and the routing, for `capture`) to the host and waits for them.
  void read_back(int64_t num_tokens, bool with_routing, cudaStream_t stream, Scratch& scratch) const;

  int moe_index_;
  int num_experts_;
  int top_k_;
  bool normalize_top_k_;
  int64_t hidden_, expert_width_;
  DeviceMatrix router_;  // [E, H]
  std::vector<CudaMlp> experts_;
  std::optional<CudaMlp> shared_expert_;
  DeviceMatrix shared_expert_gate_;  // [1, H]
};

}  // namespace moe::cuda
