#pragma once
// Rotary position embeddings in the rotate-half (GPT-NeoX) layout used by Qwen, Mixtral and GLM-4.5:
// the first rotary_dim of each head's dims rotate (all of them but for GLM's partial rotary), pair
// (i, i + rotary_dim/2); the others pass through. DeepSeek's variants: given (YaRN) frequencies,
// cos and sin scaled, and interleaved pairs.
#include <cstdint>
#include <vector>

namespace moe {

class RotaryEmbedding {
 public:
  RotaryEmbedding(int head_dim, int rotary_dim, double theta);
  // Over `inv_freq` (head_dim = rotary_dim = 2 · its size), cos and sin multiplied by `scale`.
  // `interleaved`: the pairs are adjacent floats (2i, 2i + 1); they are first reordered into halves
  // (evens, then odds), as transformers does, so the result is in the rotate-half layout.
  RotaryEmbedding(std::vector<float> inv_freq, float scale, bool interleaved);
  // Rotates `num_heads` heads of `head_dim` floats, laid out contiguously, for one token at `position`.
  void apply(float* heads, int num_heads, int64_t position) const { apply(heads, num_heads, head_dim_, position); }
  // The same for vectors `stride` floats apart (the rotary part of each head of a wider row).
  void apply(float* first, int num_vectors, int64_t stride, int64_t position) const;
  // theta^(-2i/rotary_dim) for i < rotary_dim / 2: what a device kernel rotates by, so both agree.
  const std::vector<float>& inv_freq() const { return inv_freq_; }

 private:
  int head_dim_;
  int rotary_dim_;
  std::vector<float> inv_freq_;  // [rotary_dim / 2], computed in float32 as transformers does
  float scale_ = 1.0f;
  bool interleaved_ = false;
};

}  // namespace moe
