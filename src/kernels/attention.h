#pragma once
// Causal grouped-query attention of one sequence's new tokens over the keys and values already in
// the KV cache (including their own, which the caller stored first).
#include <cstdint>

namespace moe {

struct AttentionShape {
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
};

// q: [num_new, num_heads * head_dim]; token i sits at position first_position + i and sees positions
// 0..first_position + i, whose K/V rows are keys[slot]/values[slot] with slot = kv_slots[position]
// (rows of num_kv_heads * head_dim floats at row stride kv_stride). out: [num_new, num_heads * head_dim].
void causal_attention(const float* q, int64_t num_new, int64_t first_position, const int32_t* kv_slots,
                      const float* keys, const float* values, int64_t kv_stride, const AttentionShape& shape,
                      float* out);

}  // namespace moe
