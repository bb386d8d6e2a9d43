#include "model/weight_arena.h"

#include <sys/mman.h>

#include <algorithm>

namespace moe {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kSlabBytes = size_t{256} << 20;
constexpr size_t kCacheLine = 64;

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

}  // namespace

uint16_t* WeightArena::allocate(int64_t elements) {
  const size_t bytes = round_up(std::max<size_t>(1, static_cast<size_t>(elements) * sizeof(uint16_t)), kCacheLine);
  if (slabs_.empty() || slabs_.back().size - slabs_.back().used < bytes) {
    Slab slab;
    slab.size = round_up(std::max(bytes, kSlabBytes), kHugePage);
    slab.memory = aligned_array<char>(kHugePage, slab.size);
    // Only a hint: where transparent huge pages are off, the slab keeps 4 KiB pages.
    madvise(slab.memory.get(), slab.size, MADV_HUGEPAGE);
    slabs_.push_back(std::move(slab));
  }
  Slab& slab = slabs_.back();
  char* piece = slab.memory.get() + slab.used;
  slab.used += bytes;
  return reinterpret_cast<uint16_t*>(piece);
}

}  // namespace moe
