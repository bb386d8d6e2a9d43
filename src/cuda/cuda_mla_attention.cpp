#include "cuda/cuda_mla_attention.h"

#include "common/error.h"
#include "cuda/kernels.h"
#include "model/mla_attention_layer.h"

namespace moe::cuda {

int64_t CudaMlaAttention::row_floats(const ModelConfig& config) {
  return config.mla->kv_lora_rank + config.mla->qk_rope_head_dim;
}

CudaMlaAttention::CudaMlaAttention(const WeightSource& weights, const ModelConfig& config, const MlaTensorNames& names,
                                   int layer)
    : layer_(layer),
      shape_{config.num_attention_heads, static_cast<int>(config.mla->kv_lora_rank), config.mla->qk_nope_head_dim,
             config.mla->qk_rope_head_dim, config.mla->v_head_dim},
      norm_eps_(static_cast<float>(config.rms_norm_eps)),
      softmax_scale_(mla_softmax_scale(config)),
      rotary_scale_(mla_rotary_scale(config)),
      interleaved_(config.mla->rope_interleave),
      inv_freq_(DeviceArray<float>::from_host(mla_inv_freq(config))) {
  const MlaConfig& m = *config.mla;
  const int64_t H = config.hidden_size, heads = shape_.num_heads, q_width = heads * m.qk_head_dim();
  if (names.q_weight.empty()) {
    q_a_ = weights.matrix(names.q_a_weight, m.q_lora_rank, H);
    q_a_norm_ = weights.vector(names.q_a_norm, m.q_lora_rank);
    q_b_ = weights.matrix(names.q_b_weight, q_width, m.q_lora_rank);
  } else {
    q_ = weights.matrix(names.q_weight, q_width, H);
  }
  kv_a_ = weights.matrix(names.kv_a_weight, shape_.row_size(), H);
  kv_a_norm_ = weights.vector(names.kv_a_norm, m.kv_lora_rank);
  kv_b_ = weights.matrix(names.kv_b_weight, heads * (m.qk_nope_head_dim + m.v_head_dim), m.kv_lora_rank);
  o_ = weights.matrix(names.o_weight, H, heads * m.v_head_dim);
}

CudaMlaAttention::Buffers CudaMlaAttention::buffers(Scratch& scratch, int64_t T) const {
  const int64_t heads = shape_.num_heads;
  const auto floats = [T](int64_t width) { return static_cast<size_t>(T * width); };
  return {scratch.q_lora.reserve(floats(q_a_.rows)),
          scratch.q.reserve(floats(heads * (shape_.nope + shape_.rope))),
          scratch.compressed.reserve(floats(shape_.row_size())),
          scratch.q_latent.reserve(floats(heads * shape_.latent)),
          scratch.out_latent.reserve(floats(heads * shape_.latent)),
          scratch.attn.reserve(floats(heads * shape_.v))};
}

void CudaMlaAttention::reserve(Scratch& scratch, int64_t max_tokens) const { buffers(scratch, max_tokens); }

void CudaMlaAttention::forward(const float* x, const StepContext& step, DeviceKvPool& kv, Scratch& scratch,
                               float* out) const {
  if (kv.row_size != shape_.row_size())
    throw Error("CUDA latent attention: the K/V pool's rows of " + std::to_string(kv.row_size) +
                " floats are not a latent and rotary key's " + std::to_string(shape_.row_size()));
  const KvPoolRef pool = kv.layer(layer_);
  if (pool.bf16)
    throw Error("CUDA latent attention reads float32 cache rows and was given a bf16 pool (model.h's "
                "kv_cache_element_bytes keeps latent rows in float32)");
  float* rows = static_cast<float*>(pool.keys);
  const int64_t T = step.batch.num_tokens();
  const auto [q_lora, q, compressed, q_latent, out_latent, attn] = buffers(scratch, T);
  if (q_a_.rows == 0) {
    step.blas.linear(x, T, q_, q);
  } else {
    step.blas.linear(x, T, q_a_, q_lora);
    rms_norm(q_lora, T, q_a_.rows, q_a_norm_.data(), norm_eps_, q_lora, step.stream);
    step.blas.linear(q_lora, T, q_b_, q);
  }
  step.blas.linear(x, T, kv_a_, compressed);
  latent_rotate_store(q, compressed, T, shape_, kv_a_norm_.data(), norm_eps_, step.batch.positions(),
                      {inv_freq_.data(), rotary_scale_, interleaved_}, step.batch.own_slots(), rows,
                      step.stream);
  absorb_queries(q, T, shape_, kv_b_.ref(), q_latent, step.stream);
  latent_attention(q_latent, q, T, step.batch.attention_tables(), rows, shape_,
                   softmax_scale_, out_latent, step.stream);
  expand_values(out_latent, T, shape_, kv_b_.ref(), attn, step.stream);
  step.blas.linear(attn, T, o_, out);
}

}  // namespace moe::cuda
