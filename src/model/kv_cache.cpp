#include "model/kv_cache.h"

namespace moe {

KvCache::KvCache(int num_layers, int num_kv_heads, int head_dim, int64_t num_slots)
    : num_slots_(num_slots), row_size_(static_cast<int64_t>(num_kv_heads) * head_dim) {
  keys_.resize(num_layers);
  values_.resize(num_layers);
  for (int l = 0; l < num_layers; ++l) {
    keys_[l].assign(static_cast<size_t>(num_slots * row_size_), 0.0f);
    values_[l].assign(static_cast<size_t>(num_slots * row_size_), 0.0f);
  }
}

int64_t KvCache::bytes() const {
  return 2 * static_cast<int64_t>(keys_.size()) * num_slots_ * row_size_ * static_cast<int64_t>(sizeof(float));
}

}  // namespace moe
