#pragma once
// Rotary position embeddings in the rotate-half (GPT-NeoX) layout used by Qwen and Mixtral.
#include <cstdint>
#include <vector>

namespace moe {

class RotaryEmbedding {
 public:
  RotaryEmbedding(int head_dim, double theta);
  // Rotates `num_heads` heads of `head_dim` floats, laid out contiguously, for one token at `position`.
  void apply(float* heads, int num_heads, int64_t position) const;
  // theta^(-2i/head_dim) for i < head_dim / 2: what a device kernel rotates by, so both agree.
  const std::vector<float>& inv_freq() const { return inv_freq_; }

 private:
  int head_dim_;
  std::vector<float> inv_freq_;  // [head_dim / 2], computed in float32 as transformers does
};

}  // namespace moe
