#pragma once
// One decoder layer's MoE block: the router's choice by the config's routing kind (reported to the
// capture hook), the routed experts through the configured runner, and the shared expert when present
// (Qwen2-MoE's behind a sigmoid gate, DeepSeek's and GLM's added as is).
#include <span>
#include <optional>

#include "kernels/weight.h"
#include "model/dense_mlp.h"
#include "model/model_config.h"
#include "model/model_plan.h"
#include "model/tensor_shard.h"
#include "moe/grouped_sigmoid_router.h"
#include "moe/moe_runner.h"
#include "moe/routing_capture.h"

namespace moe {

class Checkpoint;

// The routed experts of one MoE layer, named by `names`, as views into the checkpoint; with `held`
// (an expert-parallel rank's shard) only those experts are read, the others left empty; with `shard`
// (a tensor-parallel rank) each expert's part of its intermediate width.
ExpertWeights load_routed_experts(const Checkpoint& ckpt, const ModelConfig& config, const MoeTensorNames& names,
                                  std::span<const int32_t> held = {}, const TensorShard& shard = {});

class MoeBlock {
 public:
  // `capture_index`: the layer's index among the MoE layers its capture buffer holds (a pipeline
  // stage captures only its own).
  // `held_experts`: the routed experts this process runs (empty: all of them). `shards`: a
  // tensor-parallel rank's part of every routed expert's intermediate width (shards.expert) and of the
  // shared expert's (shards.dense); the router is whole on every rank, so every rank routes alike.
  MoeBlock(const Checkpoint& ckpt, const ModelConfig& config, const MoeTensorNames& names, int capture_index,
           std::span<const int32_t> held_experts = {}, const RankShards& shards = {});
  // out[T, H] = moe(x[T, H]) (a tensor-parallel rank's partial sum); out is overwritten. `limit` restricts a verify pass's tokens to a
  // shared pool of experts (off by default; softmax routing only); the capture hook sees the routing
  // actually used.
  void forward(const float* x, int64_t num_tokens, MoeRunner& runner, RoutingCapture* capture, float* out,
               const ExpertLimit& limit = {}) const;

 private:
  void route(const float* x, int64_t num_tokens, const ExpertLimit& limit, Routing& routing) const;
  // Adds the shared expert's output (times its gate, where it has one) to out.
  void add_shared_expert(const float* x, int64_t num_tokens, float* out) const;

  int capture_index_;
  int top_k_;
  bool normalize_top_k_;
  RoutingKind routing_kind_;
  GroupedSigmoidRule grouped_rule_;  // RoutingKind::SigmoidGrouped
  WeightView router_;
  VectorParam correction_bias_;  // [E], RoutingKind::SigmoidGrouped
  ExpertWeights experts_;
  std::optional<DenseMlp> shared_expert_;
  std::optional<WeightView> shared_gate_;  // [1, H]
};

}  // namespace moe
