#pragma once
// One decoder layer's MoE block on the device, as model/moe_block.h on the CPU: the router's top-k
// (written by the router kernel straight into the capture's device buffer when routing is captured),
// the routed experts grouped by expert, the weighted sum per token in top-k order, and Qwen2-MoE's
// sigmoid-gated shared expert, or DeepSeek's and GLM's grouped sigmoid router (grouped_sigmoid_routing.h)
// and ungated shared experts; with an expert limit (speculative verify), the tree tokens route
// within the layer's pool (expert_pool). Up to kGroupedOnDeviceTokens tokens the experts run as two grouped
// kernels that read each expert's row range on the device (no host round trip: such steps can be
// captured in a CUDA graph). Larger steps in bf16 products run the tiled grouped kernels
// (grouped_expert_mlp_tiles), which read the row ranges on the device too: no step waits for the
// device inside a layer. Larger steps in the exact float32 mode read the row counts back and run
// each expert's SGEMMs (cuBLAS without TF32, as the goldens need).
//
// Expert parallelism (an ExpertPlacement of D > 1 shards) runs as on the CPU's grouped runner: the
// routing and grouping stay global, then each shard in turn runs the expert kernels over only its
// own experts and adds its pairs per token in top-k order into its own partial [T, H] output, and
// all_reduce_sum sums the D partials in shard order. The shards share this GPU and its stream. With
// D = 1 none of this runs: no extra launch, no extra buffer.
//
// A GPU rank of a group (model/tensor_shard.h's RankShards) holds each routed expert's part of the
// width (tensor parallelism) and the shared expert's, and with expert parallelism over the group only
// its own shard's experts: it routes every token alike (the router is whole on every rank), runs its
// experts, and leaves the model to all-reduce its partial output over the group.
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "cuda/cuda_mlp.h"
#include "cuda/grouped_sigmoid_routing.h"
#include "cuda/kernels.h"
#include "cuda/step_context.h"
#include "model/model_config.h"
#include "model/model_plan.h"
#include "model/tensor_shard.h"
#include "moe/expert_placement.h"
#include "moe/routing_capture.h"

namespace moe::cuda {

class CudaMoeBlock {
 public:
  // Activations kept from step to step, shared by every MoE layer.
  struct Scratch {
    DeviceArray<float> router_logits;             // [T, E]
    DeviceArray<int32_t> ids;                     // [T, K]
    DeviceArray<float> weights;                   // [T, K]
    DeviceArray<int32_t> offsets, cursor;         // [E + 2] (a ticket after the E + 1 offsets), [E]
    DeviceArray<int32_t> active;                  // [E], the experts with rows, then -1
    DeviceArray<int32_t> order, slot_of_pair;     // [T·K]
    DeviceArray<float> gathered, expert_out;      // [T·K, H], rows grouped by expert
    DeviceArray<float> shared, shared_gate;       // [T, H], [T]
    DeviceArray<int32_t> shard_active;            // [D, E/D]: each shard's experts with rows (D > 1)
    DeviceArray<float> partials;                  // [D - 1, T, H]: shards 1.. (shard 0 writes out; D > 1)
    DeviceArray<float> pool_probs;                // [T, E]: the limited tokens' probabilities (expert limit)
    DeviceArray<int32_t> in_pool;                 // [E]: the expert limit's pool
    DeviceArray<uint16_t> x_bf16, act_bf16;       // [T, H], [T·K, width]: the tiled kernels' bf16 operands
    DeviceArray<int32_t> tiles;                   // the tiled kernels' tile table
    std::vector<int32_t> host_offsets;            // [E + 1], read back each step (float32 above the grouped size)
  };

  static constexpr int64_t kGroupedOnDeviceTokens = 256;
  // Up to this many tokens one block routes and groups them in a single launch; larger steps route
  // with a warp per token over many blocks (one block of 512 threads took 30 us for batch 32's
  // routing on the H100, the four launches of the spread path ~22), grouped by the last block of the
  // same launch up to kGroupedOnDeviceTokens tokens.
  static constexpr int64_t kFusedRoutingTokens = 16;

  // `placement`: which experts each shard holds (ExpertPlacement::uniform(E, 1): no sharding). `rank`:
  // this GPU's part in a group of ranks (the default: one rank holding everything).
  CudaMoeBlock(const WeightSource& weights, const ModelConfig& config, const MoeTensorNames& names, int layer,
               const ExpertPlacement& placement, const RankShards& rank = {});
  // out[T, H] = moe(x[T, H]); out is overwritten. With `capture`, the router also writes the layer's
  // rows into the capture's device buffer (no copy to the host here). Above kGroupedOnDeviceTokens
  // in the float32 mode, waits for the device once, to learn how many rows each expert got.
  void forward(const float* x, const StepContext& step, RoutingCapture* capture, Scratch& scratch,
               CudaMlp::Scratch& mlp_scratch, float* out) const;
  // Grows the scratch to what any step of up to max_tokens tokens needs.
  void reserve(Scratch& scratch, CudaMlp::Scratch& mlp_scratch, int64_t max_tokens, const Blas& blas) const;

 private:
  // How a step's routed experts run: the grouped kernels of decode-sized steps, the tiled kernels of
  // larger steps in bf16 products, or each expert's GEMMs (larger steps in float32).
  enum class Path { Grouped, Tiled, PerExpert };
  Path path_for(int64_t tokens, const Blas& blas) const;
  // Grows the scratch to a step of `tokens` tokens on `path`.
  void reserve_for(Scratch& scratch, CudaMlp::Scratch& mlp_scratch, int64_t tokens, Path path) const;
  // With an expert limit in the step's batch (a verify pass's --max-tree-experts, at least top_k:
  // the model checks), queues this layer's pool from the router logits and returns it for the
  // routing kernels; otherwise no limit.
  ExpertLimitRef expert_limit(const float* logits, const StepContext& step, Scratch& scratch) const;
  // The grouped sigmoid router's ids and weights, then the pairs grouped by expert (no expert limit).
  void route_grouped_sigmoid_and_group(const float* logits, const StepContext& step, const DeviceRoutingRows& captured,
                                       Scratch& scratch) const;
  // The capture's device block for this layer; a capture without one, or too small, is a moe::Error.
  DeviceRoutingRows capture_rows(RoutingCapture* capture, int64_t num_tokens) const;
  // One shard's experts (`experts`: their global ids) over their grouped rows into expert_out: on the
  // device through `active` (the shard's experts with rows) and `tables`, or, above
  // kGroupedOnDeviceTokens, each expert's GEMMs over the rows that host_offsets give it.
  void run_experts(const float* x, const StepContext& step, Path path, Scratch& scratch, const int32_t* active,
                   const ExpertTables& tables, std::span<const int32_t> experts, CudaMlp::Scratch& mlp_scratch,
                   float* expert_out) const;
  // Every shard's run_experts and partial sum, then the all-reduce into out (D > 1); a rank of a group
  // runs its own shard's into out.
  void run_shards(const float* x, const StepContext& step, Path path, Scratch& scratch,
                  CudaMlp::Scratch& mlp_scratch, float* out) const;

  int moe_index_;
  int num_experts_;
  int top_k_;
  bool normalize_top_k_;
  int64_t hidden_, expert_width_;
  DeviceMatrix router_;  // [E, H]
  std::vector<CudaMlp> experts_;  // empty matrices for the experts of other ranks' shards
  int first_held_ = 0;             // an expert this rank holds
  int own_shard_ = -1;             // a rank of a group: the one shard it runs; -1: every shard here
  // Device arrays of the experts' gate/up/down pointers, and the grouped kernels' view of them.
  DeviceArray<const void*> gate_table_, up_table_, down_table_;
  ExpertTables tables_{};
  // The placement's [D][E/D] global ids; with D > 1, each expert's shard on the device and the tables
  // as a shard's grouped kernels see them (E/D entries of `active`).
  std::vector<std::vector<int32_t>> shard_experts_;
  DeviceArray<int32_t> expert_owner_;  // [E]
  ExpertTables shard_tables_{};
  std::optional<CudaMlp> shared_expert_;
  std::optional<DeviceMatrix> shared_gate_;  // [1, H]; none: the shared expert is added as is
  // RoutingKind::SigmoidGrouped: the rule, whose correction bias [E] lives in correction_bias_.
  std::optional<GroupedSigmoidRouting> grouped_sigmoid_;
  DeviceArray<float> correction_bias_;
};

}  // namespace moe::cuda
