#pragma once
// Causal grouped-query attention of a batch's new tokens over the keys and values already in the
// KV cache (including their own, which the caller stored first).
#include <cstdint>
#include <span>

namespace moe {

struct AttentionShape {
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
};

// One sequence's new tokens: token i sits at position first_position + i and sees positions
// 0..first_position + i, whose K/V rows are at slot kv_slots[position].
struct AttentionSequence {
  int64_t num_new = 0;
  int64_t first_position = 0;
  const int32_t* kv_slots = nullptr;
};

// All sequences of a batch in one call, so that the threads share out every (token, KV head) of
// the batch; a decode batch has only num_kv_heads of them per sequence.
// q: [Σ num_new, num_heads * head_dim], the sequences' tokens one after another. keys/values: the
// cache's slot 0, rows of num_kv_heads * head_dim floats at row stride kv_stride.
// out: [Σ num_new, num_heads * head_dim].
void causal_attention(const float* q, std::span<const AttentionSequence> sequences, const float* keys,
                      const float* values, int64_t kv_stride, const AttentionShape& shape, float* out);

}  // namespace moe
