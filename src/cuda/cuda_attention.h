#pragma once
// One decoder layer's self-attention on the device, as model/attention_layer.h on the CPU: q/k/v
// projections (+ bias), per-head q/k RMSNorm (Qwen3), rotary embeddings (partial ones, GLM's,
// through partial_rotary_layout.h), K/V stored at each token's slot, causal GQA, output projection.
#include "cuda/weight_source.h"
#include "cuda/kv_pool.h"
#include "cuda/step_context.h"
#include "model/attention_weights.h"
#include "model/model_config.h"

namespace moe::cuda {

class CudaAttention {
 public:
  // Activations kept from step to step, shared by every layer.
  struct Scratch {
    DeviceArray<float> q, k, v, attn;
    DeviceArray<float> split_partials;  // the split attention's per-split results
    DeviceArray<int32_t> split_counters;
  };

  // `layer`: the layer's index in the K/V pool. `shard`: the heads this rank holds (tensor parallelism:
  // model/tensor_shard.h; one rank holds all), whose partial o_proj sum `forward` writes.
  CudaAttention(const WeightSource& weights, const ModelConfig& config, const AttentionTensorNames& names, int layer,
                const TensorShard& shard = {});
  // out[T, H] = attention(x[T, H]) for the whole batch; writes this layer's K/V of every new token.
  void forward(const float* x, const StepContext& step, DeviceKvPool& kv, Scratch& scratch, float* out) const;
  // Grows `scratch` to what any step of up to max_tokens tokens needs.
  void reserve(Scratch& scratch, int64_t max_tokens) const;

 private:
  struct Buffers {
    float *q, *k, *v, *attn;
  };
  // The step's activations in `scratch`, grown to T tokens where smaller.
  Buffers buffers(Scratch& scratch, int64_t T) const;

  int layer_;
  int num_heads_, num_kv_heads_, head_dim_;
  float norm_eps_;
  DeviceArray<float> inv_freq_;
  AttentionWeights<DeviceMatrix, DeviceArray<float>> w_;
};

}  // namespace moe::cuda
