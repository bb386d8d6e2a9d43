#pragma once
// The checkpoint tensors of one decoder layer's attention, in whatever form a backend keeps them
// (the CPU: WeightView and VectorParam; CUDA: device arrays). Each backend passes its two loaders,
// so the tensors' names and shapes are written down once.
#include <cstdint>
#include <string>

#include "model/model_config.h"

namespace moe {

template <typename Matrix, typename Vector>
struct AttentionWeights {
  Matrix q_proj, k_proj, v_proj, o_proj;
  Vector q_bias, k_bias, v_bias;  // empty without attention bias
  Vector q_norm, k_norm;          // empty without q/k norm

  // matrix(name, rows, cols) -> Matrix and vector(name, n) -> Vector read one tensor each.
  template <typename LoadMatrix, typename LoadVector>
  static AttentionWeights load(const ModelConfig& config, int layer, LoadMatrix matrix, LoadVector vector) {
    const std::string p = "model.layers." + std::to_string(layer) + ".self_attn.";
    const int64_t hidden = config.hidden_size;
    const int64_t q_width = static_cast<int64_t>(config.num_attention_heads) * config.head_dim;
    const int64_t kv_width = static_cast<int64_t>(config.num_key_value_heads) * config.head_dim;
    AttentionWeights w;
    w.q_proj = matrix(p + "q_proj.weight", q_width, hidden);
    w.k_proj = matrix(p + "k_proj.weight", kv_width, hidden);
    w.v_proj = matrix(p + "v_proj.weight", kv_width, hidden);
    w.o_proj = matrix(p + "o_proj.weight", hidden, q_width);
    if (config.attention_bias) {
      w.q_bias = vector(p + "q_proj.bias", q_width);
      w.k_bias = vector(p + "k_proj.bias", kv_width);
      w.v_bias = vector(p + "v_proj.bias", kv_width);
    }
    if (config.qk_norm) {
      w.q_norm = vector(p + "q_norm.weight", config.head_dim);
      w.k_norm = vector(p + "k_norm.weight", config.head_dim);
    }
    return w;
  }
};

}  // namespace moe
