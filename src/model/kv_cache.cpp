#include "model/kv_cache.h"

#include <utility>

namespace moe {

namespace {

constexpr size_t kCacheLine = 64;

}  // namespace

KvCache::KvCache(std::vector<int64_t> row_floats, int64_t num_slots)
    : num_slots_(num_slots), row_floats_(std::move(row_floats)) {
  for (int64_t width : row_floats_) rows_.push_back(aligned_array<float>(kCacheLine, static_cast<size_t>(num_slots * width)));
}

int64_t KvCache::bytes() const {
  int64_t floats = 0;
  for (int64_t width : row_floats_) floats += num_slots_ * width;
  return floats * static_cast<int64_t>(sizeof(float));
}

}  // namespace moe
