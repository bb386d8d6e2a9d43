#include "model/kv_cache.h"

namespace moe {

namespace {

constexpr size_t kCacheLine = 64;

}  // namespace

KvCache::KvCache(int num_layers, int num_kv_heads, int head_dim, int64_t num_slots)
    : num_slots_(num_slots), num_layers_(num_layers), row_size_(static_cast<int64_t>(num_kv_heads) * head_dim) {
  for (int l = 0; l < num_layers; ++l) {
    keys_.push_back(aligned_array<float>(kCacheLine, static_cast<size_t>(num_slots * row_size_)));
    values_.push_back(aligned_array<float>(kCacheLine, static_cast<size_t>(num_slots * row_size_)));
  }
}

int64_t KvCache::bytes() const {
  return 2 * num_layers_ * num_slots_ * row_size_ * static_cast<int64_t>(sizeof(float));
}

}  // namespace moe
