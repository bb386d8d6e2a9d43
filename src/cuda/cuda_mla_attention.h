#pragma once
// One decoder layer's multi-head latent attention (DeepSeek-V3) on the device, as
// model/mla_attention_layer.h on the CPU: q through its LoRA (q_a, RMSNorm, q_b) or a plain q_proj;
// kv_a gives each token's latent (RMSNorm'd) and the rotary key its heads share, stored as the
// token's row of the layer's cache (latent + rope floats, in the K/V pool's key rows); rotary on the
// rope parts (interleaved pairs, YaRN frequencies and factors per the config). The heads attend in
// the absorbed form (mla_kernels.h), prefill and decode alike, so a decode step reads each visible
// token's row once and never expands the latents; the steps are CUDA-graph capturable.
#include "cuda/weight_source.h"
#include "cuda/kv_pool.h"
#include "cuda/mla_kernels.h"
#include "cuda/step_context.h"
#include "model/model_config.h"
#include "model/model_plan.h"

namespace moe::cuda {

class CudaMlaAttention {
 public:
  // Activations kept from step to step, shared by every layer.
  struct Scratch {
    DeviceArray<float> q_lora, q, compressed, q_latent, out_latent, attn;
  };

  // `layer`: the layer's index in the K/V pool, whose rows must hold latent + rope floats.
  CudaMlaAttention(const WeightSource& weights, const ModelConfig& config, const MlaTensorNames& names, int layer);
  // Grows `scratch` to what a step of max_tokens tokens needs (before any step is captured).
  void reserve(Scratch& scratch, int64_t max_tokens) const;
  // out[T, H] = attention(x[T, H]) for the whole batch; writes this layer's row of every new token.
  void forward(const float* x, const StepContext& step, DeviceKvPool& kv, Scratch& scratch, float* out) const;

  // The cache row a token takes in a layer of `config`'s latent attention.
  static int64_t row_floats(const ModelConfig& config);

 private:
  struct Buffers {
    float *q_lora, *q, *compressed, *q_latent, *out_latent, *attn;
  };
  // The step's activations in `scratch`, grown to T tokens where they are smaller.
  Buffers buffers(Scratch& scratch, int64_t T) const;

  int layer_;
  LatentShape shape_;
  float norm_eps_, softmax_scale_, rotary_scale_;
  bool interleaved_;
  DeviceArray<float> inv_freq_;
  DeviceMatrix q_, q_a_, q_b_, kv_a_, kv_b_, o_;  // q_ empty with a q LoRA, q_a_/q_b_ without one
  DeviceArray<float> q_a_norm_, kv_a_norm_;
};

}  // namespace moe::cuda
