#include "model/kv_cache.h"

#include <algorithm>
#include <cstdlib>
#include <new>

namespace moe {

namespace {

constexpr size_t kCacheLine = 64;

// One layer's keys or values, cache-line aligned (aligned_alloc wants a multiple of the alignment).
float* allocate_slots(int64_t floats) {
  const size_t bytes = (static_cast<size_t>(floats) * sizeof(float) + kCacheLine - 1) / kCacheLine * kCacheLine;
  void* memory = std::aligned_alloc(kCacheLine, std::max(bytes, kCacheLine));
  if (!memory) throw std::bad_alloc();
  return static_cast<float*>(memory);
}

}  // namespace

void KvCache::FreeDeleter::operator()(float* p) const { std::free(p); }

KvCache::KvCache(int num_layers, int num_kv_heads, int head_dim, int64_t num_slots)
    : num_slots_(num_slots), num_layers_(num_layers), row_size_(static_cast<int64_t>(num_kv_heads) * head_dim) {
  for (int l = 0; l < num_layers; ++l) {
    keys_.emplace_back(allocate_slots(num_slots * row_size_));
    values_.emplace_back(allocate_slots(num_slots * row_size_));
  }
}

int64_t KvCache::bytes() const {
  return 2 * num_layers_ * num_slots_ * row_size_ * static_cast<int64_t>(sizeof(float));
}

}  // namespace moe
