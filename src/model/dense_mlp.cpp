#include "model/dense_mlp.h"

#include <vector>

#include "kernels/activation.h"
#include "kernels/linear.h"
#include "model/safetensors.h"

namespace moe {

DenseMlp DenseMlp::load(const Checkpoint& ckpt, const MlpTensorNames& names, int64_t hidden, int64_t intermediate,
                        const TensorShard& shard) {
  const IndexRange part = shard.even_part(intermediate), all_hidden{0, hidden};
  return {ckpt.projection_block(names.gate, intermediate, hidden, part, all_hidden),
          ckpt.projection_block(names.up, intermediate, hidden, part, all_hidden),
          ckpt.projection_block(names.down, hidden, intermediate, all_hidden, part)};
}

void DenseMlp::forward(const float* x, int64_t num_tokens, float* out) const {
  const int64_t width = gate.rows;
  // Kept per thread from call to call, as the model's other activations (see CausalLm's scratch).
  thread_local std::vector<float> g, u;
  g.resize(static_cast<size_t>(num_tokens * width));
  u.resize(g.size());
  linear(x, num_tokens, gate, g.data());
  linear(x, num_tokens, up, u.data());
  silu_mul(g.data(), u.data(), static_cast<int64_t>(g.size()));
  linear(g.data(), num_tokens, down, out);
}

}  // namespace moe
