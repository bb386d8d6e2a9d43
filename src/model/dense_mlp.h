#pragma once
// A SwiGLU MLP: down(silu(gate(x)) * up(x)). Dense decoder layers and Qwen2-MoE's shared expert.
#include "kernels/weight.h"
#include "model/model_plan.h"
#include "model/tensor_shard.h"

namespace moe {

class Checkpoint;

struct DenseMlp {
  WeightView gate, up, down;

  // The matrices `names` names, of width `intermediate` over `hidden`; a tensor-parallel rank's
  // `shard` holds its part of the intermediate width (gate and up rows, down columns).
  static DenseMlp load(const Checkpoint& ckpt, const MlpTensorNames& names, int64_t hidden, int64_t intermediate,
                       const TensorShard& shard = {});
  // out[T, H] = mlp(x[T, H]) (a tensor-parallel rank's partial sum); out is overwritten.
  void forward(const float* x, int64_t num_tokens, float* out) const;
};

}  // namespace moe
