#pragma once
// One pre-RMSNorm decoder layer as a LayerPlan describes it: attention (GQA or latent) and a
// feed-forward block (MoE or dense), each added to the residual stream. The decoder's layers and
// the next-token-prediction module's layer are both this.
#include <optional>
#include <span>

#include "kernels/weight.h"
#include "model/attention_layer.h"
#include "model/dense_mlp.h"
#include "model/forward_batch.h"
#include "model/kv_cache.h"
#include "model/mla_attention_layer.h"
#include "model/model_config.h"
#include "model/model_plan.h"
#include "model/moe_block.h"
#include "model/tensor_shard.h"
#include "parallel/communicator.h"

namespace moe {

class Checkpoint;

class DecoderLayer {
 public:
  // `kv_layer`: the layer's row in the KV cache it is given; `capture_index`: its index among the
  // MoE layers its capture hook reports (a MoE layer only); `held_experts`: the routed experts this
  // process runs (empty: all of them). `shards`: a tensor-parallel rank's part of the layer, whose
  // partial attention and feed-forward outputs `tensor_group` all-reduces (none: the whole layer).
  DecoderLayer(const Checkpoint& ckpt, const ModelConfig& config, const LayerPlan& names, int kv_layer,
               int capture_index, std::span<const int32_t> held_experts, const RankShards& shards = {},
               Communicator* tensor_group = nullptr);

  // x[T, H], the residual stream, updated in place; normed and branch are scratch of [T, H].
  void forward(float* x, const ForwardBatch& batch, KvCache& kv, MoeRunner& runner, RoutingCapture* capture,
               const ExpertLimit& limit, float* normed, float* branch) const;

 private:
  // A tensor-parallel rank's partial output of the attention or feed-forward block, summed over the
  // ranks (in rank order, by the host communicator): afterwards every rank holds the same sum, so
  // every rank's residual stream, and so its router's choice, is the same.
  void complete_partial_sum(float* partial, size_t count) const;

  int64_t hidden_;
  float eps_;
  Communicator* tensor_group_;
  VectorParam input_norm_, post_attention_norm_;
  std::optional<AttentionLayer> attention_;      // AttentionKind::Gqa
  std::optional<MlaAttentionLayer> mla_attention_;  // AttentionKind::Mla
  std::optional<MoeBlock> moe_;
  std::optional<DenseMlp> mlp_;
};

}  // namespace moe
