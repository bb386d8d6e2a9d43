#pragma once
// The checkpoint tensors of one decoder layer's attention, in whatever form a backend keeps them
// (the CPU: WeightView and VectorParam; CUDA: device arrays). Each backend passes its two loaders,
// so the tensors' shapes are written down once (their names are the architecture's plan's).
#include <cstdint>
#include <string>

#include "model/model_config.h"
#include "model/model_plan.h"

namespace moe {

template <typename Matrix, typename Vector>
struct AttentionWeights {
  Matrix q_weight, k_weight, v_weight, o_weight;
  Vector q_bias, k_bias, v_bias;  // empty without attention bias
  Vector q_norm, k_norm;          // empty without q/k norm

  // matrix(name, rows, cols) -> Matrix and vector(name, n) -> Vector read one tensor each.
  template <typename LoadMatrix, typename LoadVector>
  static AttentionWeights load(const ModelConfig& config, const AttentionTensorNames& names, LoadMatrix matrix,
                               LoadVector vector) {
    const int64_t hidden = config.hidden_size;
    const int64_t q_width = static_cast<int64_t>(config.num_attention_heads) * config.head_dim;
    const int64_t kv_width = static_cast<int64_t>(config.num_key_value_heads) * config.head_dim;
    AttentionWeights w;
    w.q_weight = matrix(names.q_weight, q_width, hidden);
    w.k_weight = matrix(names.k_weight, kv_width, hidden);
    w.v_weight = matrix(names.v_weight, kv_width, hidden);
    w.o_weight = matrix(names.o_weight, hidden, q_width);
    if (!names.q_bias.empty()) {
      w.q_bias = vector(names.q_bias, q_width);
      w.k_bias = vector(names.k_bias, kv_width);
      w.v_bias = vector(names.v_bias, kv_width);
    }
    if (!names.q_norm.empty()) {
      w.q_norm = vector(names.q_norm, config.head_dim);
      w.k_norm = vector(names.k_norm, config.head_dim);
    }
    return w;
  }
};

}  // namespace moe
