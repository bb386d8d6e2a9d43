#pragma once
// The checkpoint tensors of one decoder layer's attention, in whatever form a backend keeps them
// (the CPU: WeightView and VectorParam; CUDA: device arrays). Each backend passes its two loaders,
// so the tensors' shapes are written down once (their names are the architecture's plan's). A
// tensor-parallel rank loads its heads' rows of q/k/v and the matching columns of o (model/tensor_shard.h).
#include <cstdint>
#include <string>

#include "model/model_config.h"
#include "model/model_plan.h"
#include "model/tensor_shard.h"

namespace moe {

template <typename Matrix, typename Vector>
struct AttentionWeights {
  Matrix q_weight, k_weight, v_weight, o_weight;
  Vector q_bias, k_bias, v_bias;  // empty without attention bias
  Vector q_norm, k_norm;          // empty without q/k norm

  // matrix(name, rows, cols, row_part, col_part) -> Matrix and vector(name, n, part) -> Vector read
  // one tensor each: of the whole tensor's shape, the part `shard` holds (all of it for one rank).
  // q/k/v read `input_width` columns (0: hidden_size; an EAGLE-3 head's read 2 · hidden_size).
  template <typename LoadMatrix, typename LoadVector>
  static AttentionWeights load(const ModelConfig& config, const AttentionTensorNames& names, LoadMatrix matrix,
                               LoadVector vector, const TensorShard& shard = {}, int64_t input_width = 0) {
    const int64_t hidden = config.hidden_size, hd = config.head_dim;
    const int64_t input = input_width > 0 ? input_width : hidden;
    const int64_t q_width = config.num_attention_heads * hd, kv_width = config.num_key_value_heads * hd;
    const IndexRange q_heads = shard.query_heads(config.num_attention_heads);
    const IndexRange kv_heads = shard.kv_heads(config.num_attention_heads, config.num_key_value_heads);
    const IndexRange q_part{q_heads.begin * hd, q_heads.count * hd}, kv_part{kv_heads.begin * hd, kv_heads.count * hd};
    const IndexRange all_hidden{0, hidden}, all_input{0, input}, all_head{0, hd};
    AttentionWeights w;
    w.q_weight = matrix(names.q_weight, q_width, input, q_part, all_input);
    w.k_weight = matrix(names.k_weight, kv_width, input, kv_part, all_input);
    w.v_weight = matrix(names.v_weight, kv_width, input, kv_part, all_input);
    w.o_weight = matrix(names.o_weight, hidden, q_width, all_hidden, q_part);
    if (!names.q_bias.empty()) {
      w.q_bias = vector(names.q_bias, q_width, q_part);
      w.k_bias = vector(names.k_bias, kv_width, kv_part);
      w.v_bias = vector(names.v_bias, kv_width, kv_part);
    }
    if (!names.q_norm.empty()) {
      w.q_norm = vector(names.q_norm, hd, all_head);
      w.k_norm = vector(names.k_norm, hd, all_head);
    }
    return w;
  }
};

}  // namespace moe
