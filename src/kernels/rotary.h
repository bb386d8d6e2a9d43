#pragma once
// Rotary position embeddings in the rotate-half (GPT-NeoX) layout used by Qwen, Mixtral and GLM-4.5:
// the first rotary_dim of each head's dims rotate (all of them but for GLM's partial rotary), pair
// (i, i + rotary_dim/2); the others pass through.
#include <cstdint>
#include <vector>

namespace moe {

class RotaryEmbedding {
 public:
  RotaryEmbedding(int head_dim, int rotary_dim, double theta);
  // Rotates `num_heads` heads of `head_dim` floats, laid out contiguously, for one token at `position`.
  void apply(float* heads, int num_heads, int64_t position) const;
  // theta^(-2i/rotary_dim) for i < rotary_dim / 2: what a device kernel rotates by, so both agree.
  const std::vector<float>& inv_freq() const { return inv_freq_; }

 private:
  int head_dim_;
  int rotary_dim_;
  std::vector<float> inv_freq_;  // [rotary_dim / 2], computed in float32 as transformers does
};

}  // namespace moe
