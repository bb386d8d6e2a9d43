#pragma once
// The KV cache as a pool of token slots (SGLang's token_to_kv_pool): every attention layer stores
// the key and value of a token at the same slot index. Which slots a request owns is decided by the
// scheduler and passed in each ForwardBatch (the request-to-token table); the cache only holds data.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/aligned_memory.h"

namespace moe {

class KvCache {
 public:
  KvCache(int num_layers, int num_kv_heads, int head_dim, int64_t num_slots);
  // A cache that holds no data, only its slot count: for a model whose pool lives on a device
  // (CudaModel), so that batches are still checked against the number of slots.
  static KvCache placeholder(int64_t num_slots) { return KvCache(0, 0, 0, num_slots); }

  int64_t num_slots() const { return num_slots_; }
  int64_t bytes() const;
  int64_t row_size() const { return row_size_; }
  // [num_kv_heads * head_dim] floats of one token slot in one layer.
  float* key(int layer, int64_t slot) { return keys_[layer].get() + slot * row_size_; }
  float* value(int layer, int64_t slot) { return values_[layer].get() + slot * row_size_; }
  const float* key(int layer, int64_t slot) const { return keys_[layer].get() + slot * row_size_; }
  const float* value(int layer, int64_t slot) const { return values_[layer].get() + slot * row_size_; }

 private:
  int64_t num_slots_;
  int64_t num_layers_;
  int64_t row_size_;
  // [layer][slot * row_size], aligned to cache lines (plain new[] left every 256-byte head row
  // across five lines instead of four), left uninitialised: a slot is always written before it is
  // read, and untouched pages of a large pool then cost no memory.
  std::vector<AlignedArray<float>> keys_;
  std::vector<AlignedArray<float>> values_;
};

}  // namespace moe
