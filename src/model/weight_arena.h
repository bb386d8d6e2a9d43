#pragma once
// Memory for the weights a checkpoint tiles at load (kernels/weight_tiling.h): large slabs, aligned
// to and advised for 2 MiB pages, handed out in cache-line-aligned pieces. Thousands of 1 MiB
// expert matrices then share huge pages, which cuts the TLB misses of streaming gigabytes of
// weights every decode step.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/aligned_memory.h"

namespace moe {

class WeightArena {
 public:
  // elements uint16_t values, 64-byte aligned, valid for the arena's lifetime.
  uint16_t* allocate(int64_t elements);

 private:
  struct Slab {
    AlignedArray<char> memory;
    size_t size = 0, used = 0;
  };
  std::vector<Slab> slabs_;
};

}  // namespace moe
