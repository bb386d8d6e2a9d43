#include <string>
#include <vector>

#include "common/error.h"
#include "moe/moe_ops.h"
#include "moe/moe_runner_backends.h"

namespace moe {
namespace {

// D expert-parallel shards run one after another in this process; each keeps its own partial
// output until the all-reduce, exactly as D devices would. Not thread-safe: one runner per worker.
class GroupedMoeRunner final : public MoeRunner {
 public:
  explicit GroupedMoeRunner(ExpertPlacement placement) : placement_(std::move(placement)) {
    if (placement_.ep_size() < 1) throw Error("the grouped MoE runner needs a placement with at least one device");
  }

  void run(const float* hidden, int64_t num_tokens, const Routing& routing, const ExpertWeights& experts,
           float* out) override {
    if (experts.num_experts() != placement_.num_experts)
      throw Error("expert placement is for " + std::to_string(placement_.num_experts) + " experts but the layer has " +
                  std::to_string(experts.num_experts()));
    const int64_t output_size = num_tokens * experts.hidden_size;
    const int ep_size = placement_.ep_size();
    partials_.resize(static_cast<size_t>(ep_size - 1));
    std::vector<float*> device_outputs{out};
    for (std::vector<float>& partial : partials_) {
      partial.resize(static_cast<size_t>(output_size));
      device_outputs.push_back(partial.data());
    }
    for (int d = 0; d < ep_size; ++d) run_device(d, hidden, num_tokens, routing, experts, device_outputs[d]);
    all_reduce_sum(device_outputs, output_size);
  }

 private:
  // One device's share: ops 1–3 over its local experts, writing its partial [T, H] output.
  void run_device(int device, const float* hidden, int64_t num_tokens, const Routing& routing,
                  const ExpertWeights& experts, float* partial) {
    const std::vector<int32_t>& mapping = placement_.device_expert_mapping[device];
    local_gate_.clear();
    local_up_.clear();
    local_down_.clear();
    for (int32_t global : mapping) {
      local_gate_.push_back(experts.gate[global]);
      local_up_.push_back(experts.up[global]);
      local_down_.push_back(experts.down[global]);
    }
    prepare_moe_routing_tensors(routing.ids.data(), routing.weights.data(), num_tokens, routing.top_k, mapping,
                                placement_.num_experts, tensors_);
    projection_to_intermediate(hidden, num_tokens, tensors_.routed_tokens, tensors_.num_routed_tokens, local_gate_,
                               gate_);
    projection_to_intermediate(hidden, num_tokens, tensors_.routed_tokens, tensors_.num_routed_tokens, local_up_, up_);
    silu_and_multiply_routed(gate_, up_, tensors_.num_routed_tokens, num_tokens);
    projection_to_output(gate_.data(), tensors_.token_idx_map, tensors_.routed_tokens, tensors_.num_routed_tokens,
                         tensors_.routed_token_weights, local_down_, num_tokens, routing.top_k, partial);
  }

  ExpertPlacement placement_;
  // Buffers reused across calls so a decode step allocates nothing once warm.
  MoeRoutingTensors tensors_;
  std::vector<WeightView> local_gate_, local_up_, local_down_;
  std::vector<float> gate_, up_;
  std::vector<std::vector<float>> partials_;  // devices 1..D-1; device 0 writes straight into out
};

}  // namespace

std::unique_ptr<MoeRunner> make_grouped_moe_runner(const ExpertPlacement& placement) {
  return std::make_unique<GroupedMoeRunner>(placement);
}

}  // namespace moe
