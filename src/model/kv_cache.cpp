#include "model/kv_cache.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "common/error.h"

namespace moe {

namespace {

size_t page_size() {
  static const auto bytes = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return bytes;
}

// The bytes aligned_allocate gave an array of `floats` floats aligned to pages: whole pages.
size_t allocated_bytes(int64_t floats) {
  const size_t bytes = static_cast<size_t>(floats) * sizeof(float);
  return (std::max<size_t>(bytes, 1) + page_size() - 1) / page_size() * page_size();
}

}  // namespace

KvCache::KvCache(std::vector<int64_t> row_floats, int64_t num_slots)
    : num_slots_(num_slots), row_floats_(std::move(row_floats)) {
  for (int64_t width : row_floats_) rows_.push_back(aligned_array<float>(page_size(), static_cast<size_t>(num_slots * width)));
}

void KvCache::release_memory() {
  for (size_t layer = 0; layer < rows_.size(); ++layer)
    if (madvise(rows_[layer].get(), allocated_bytes(num_slots_ * row_floats_[layer]), MADV_DONTNEED) != 0)
      throw Error(std::string("releasing the KV pool's pages (madvise): ") + std::strerror(errno));
}

int64_t KvCache::bytes() const {
  int64_t floats = 0;
  for (int64_t width : row_floats_) floats += num_slots_ * width;
  return floats * static_cast<int64_t>(sizeof(float));
}

}  // namespace moe
