#pragma once
// Rotary position embeddings in the rotate-half (GPT-NeoX) layout used by Qwen and Mixtral, and
// DeepSeek's variants: given (YaRN) frequencies, cos and sin scaled, and interleaved pairs.
#include <cstdint>
#include <vector>

namespace moe {

class RotaryEmbedding {
 public:
  RotaryEmbedding(int head_dim, double theta);
  // Over `inv_freq` (head_dim = 2 · its size), cos and sin multiplied by `scale`. `interleaved`: the
  // pairs are adjacent floats (2i, 2i + 1); they are first reordered into halves (evens, then odds),
  // as transformers does, so the result is in the rotate-half layout.
  RotaryEmbedding(std::vector<float> inv_freq, float scale, bool interleaved);
  // Rotates `num_heads` heads of `head_dim` floats, laid out contiguously, for one token at `position`.
  void apply(float* heads, int num_heads, int64_t position) const { apply(heads, num_heads, head_dim_, position); }
  // The same for vectors `stride` floats apart (the rotary part of each head of a wider row).
  void apply(float* first, int num_vectors, int64_t stride, int64_t position) const;
  // theta^(-2i/head_dim) for i < head_dim / 2: what a device kernel rotates by, so both agree.
  const std::vector<float>& inv_freq() const { return inv_freq_; }

 private:
  int head_dim_;
  std::vector<float> inv_freq_;  // [head_dim / 2], computed in float32 as transformers does
  float scale_ = 1.0f;
  bool interleaved_ = false;
};

}  // namespace moe
