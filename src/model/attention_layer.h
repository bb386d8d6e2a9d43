#pragma once
// One decoder layer's self-attention: q/k/v projections (+ bias), per-head q/k RMSNorm (Qwen3, GLM),
// rotary embeddings (on part of each head for GLM-4.5), K/V stored into the cache at each token's
// slot, causal GQA, output projection.
#include <string>

#include "kernels/attention.h"
#include "kernels/rotary.h"
#include "kernels/weight.h"
#include "model/attention_weights.h"
#include "model/forward_batch.h"
#include "model/kv_cache.h"
#include "model/model_config.h"
#include "model/tensor_shard.h"

namespace moe {

class Checkpoint;

class AttentionLayer {
 public:
  // `kv_layer` is the layer's index in its KV cache (a pipeline stage's cache holds only its layers).
  // `shard`: the heads this tensor-parallel rank computes (all of them by default). `input_width`: the
  // columns of x (0: hidden_size).
  AttentionLayer(const Checkpoint& ckpt, const ModelConfig& config, const AttentionTensorNames& names, int kv_layer,
                 const TensorShard& shard = {}, int64_t input_width = 0);
  // out[T, H] = attention(x[T, input width]) for the whole batch (for a tensor-parallel rank: its heads' share,
  // which the group's all-reduce completes); writes this layer's K/V of every new token.
  void forward(const float* x, const ForwardBatch& batch, KvCache& kv, float* out) const;

 private:
  int kv_layer_;
  AttentionShape shape_;
  float norm_eps_;
  RotaryEmbedding rotary_;
  AttentionWeights<WeightView, VectorParam> w_;
};

}  // namespace moe
