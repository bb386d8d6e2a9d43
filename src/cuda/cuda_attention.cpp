#include "cuda/cuda_attention.h"

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cuda/kernels.h"
#include "cuda/partial_rotary_layout.h"
#include "kernels/rotary.h"

namespace moe::cuda {
namespace {

using Weights = AttentionWeights<DeviceMatrix, DeviceArray<float>>;

// With partial rotary (GLM), q and k (weights, biases, norm scales) in the layout's order. A rank's
// part of q and k is whole heads, which the layout reorders within.
Weights load_weights(const WeightSource& weights, const ModelConfig& config, const AttentionTensorNames& names,
                     const TensorShard& shard) {
  std::optional<PartialRotaryLayout> layout;
  if (config.rotary_dim != config.head_dim) layout.emplace(config.head_dim, config.rotary_dim);
  const std::set<std::string> reordered = {names.q_weight, names.k_weight, names.q_bias,
                                           names.k_bias,   names.q_norm,   names.k_norm};
  const auto reorders = [&](const std::string& name) { return layout && reordered.count(name) > 0; };
  return Weights::load(
      config, names,
      [&](const std::string& name, int64_t rows, int64_t cols, IndexRange row_part, IndexRange col_part) {
        return reorders(name) ? layout->upload_rows(weights, name, rows, cols, row_part)
                              : weights.matrix(name, rows, cols, row_part, col_part);
      },
      [&](const std::string& name, int64_t n, IndexRange part) {
        return reorders(name) ? layout->upload_vector(weights, name, n, part) : weights.vector(name, n, part);
      },
      shard);
}

std::vector<float> rotary_inv_freq(const ModelConfig& config) {
  std::vector<float> inv_freq = RotaryEmbedding(config.head_dim, config.rotary_dim, config.rope_theta).inv_freq();
  if (config.rotary_dim == config.head_dim) return inv_freq;
  return PartialRotaryLayout(config.head_dim, config.rotary_dim).padded_inv_freq(inv_freq);
}

}  // namespace

CudaAttention::CudaAttention(const WeightSource& weights, const ModelConfig& config, const AttentionTensorNames& names,
                             int layer, const TensorShard& shard)
    : layer_(layer),
      num_heads_(local_attention_config(config, shard).num_attention_heads),
      num_kv_heads_(local_attention_config(config, shard).num_key_value_heads),
      head_dim_(config.head_dim),
      norm_eps_(static_cast<float>(config.rms_norm_eps)),
      inv_freq_(DeviceArray<float>::from_host(rotary_inv_freq(config))),
      w_(load_weights(weights, config, names, shard)) {}

CudaAttention::Buffers CudaAttention::buffers(Scratch& scratch, int64_t T) const {
  const int64_t q_width = w_.q_weight.rows, kv_width = w_.k_weight.rows;
  return {scratch.q.reserve(static_cast<size_t>(T * q_width)), scratch.k.reserve(static_cast<size_t>(T * kv_width)),
          scratch.v.reserve(static_cast<size_t>(T * kv_width)), scratch.attn.reserve(static_cast<size_t>(T * q_width))};
}

void CudaAttention::reserve(Scratch& scratch, int64_t max_tokens) const {
  buffers(scratch, max_tokens);
  scratch.split_partials.reserve(max_attention_partials_size(max_tokens, num_heads_, head_dim_));
  scratch.split_counters.reserve(max_attention_counters_size(max_tokens, num_heads_));
}

void CudaAttention::forward(const float* x, const StepContext& step, DeviceKvPool& kv, Scratch& scratch,
                            float* out) const {
  const int64_t T = step.batch.num_tokens();
  const int64_t q_width = w_.q_weight.rows, kv_width = w_.k_weight.rows;
  const auto [q, k, v, attn] = buffers(scratch, T);
  const KvPoolRef pool = kv.layer(layer_);
  const QueryRuns runs = attention_runs(step.batch.query_runs(), T, pool, head_dim_);
  // Null where this step's attention is not split: the arrays may hold an earlier step's smaller size.
  const size_t partials_size = attention_partials_size(runs.num_single, num_heads_, head_dim_);
  const size_t counters_size = attention_counters_size(T, runs.num_single, num_heads_);
  const AttentionSplits split{partials_size ? scratch.split_partials.reserve(partials_size) : nullptr,
                              counters_size ? scratch.split_counters.reserve(counters_size) : nullptr};
  const DeviceMatrix* projections[] = {&w_.q_weight, &w_.k_weight, &w_.v_weight};
  float* const projected[] = {q, k, v};
  step.blas.linears(x, T, projections, projected);
  if (!w_.q_bias.empty()) {
    add_bias(q, w_.q_bias.data(), T, q_width, step.stream);
    add_bias(k, w_.k_bias.data(), T, kv_width, step.stream);
    add_bias(v, w_.v_bias.data(), T, kv_width, step.stream);
  }
  norm_rotate_store(q, k, v, T, {num_heads_, num_kv_heads_, head_dim_}, w_.q_norm.empty() ? nullptr : w_.q_norm.data(),
                    w_.k_norm.empty() ? nullptr : w_.k_norm.data(), norm_eps_, step.batch.positions(), inv_freq_.data(),
                    step.batch.own_slots(), pool, split.counters, step.stream);
  causal_attention(q, runs, step.batch.attention_tables(), pool, num_heads_, num_kv_heads_, head_dim_, split, attn,
                   step.stream);
  step.blas.linear(attn, T, w_.o_weight, out);
}

}  // namespace moe::cuda
