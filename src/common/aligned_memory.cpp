#include "common/aligned_memory.h"

#include <cstdlib>
#include <new>

namespace moe {

void FreeDeleter::operator()(void* p) const { std::free(p); }

void* aligned_allocate(size_t alignment, size_t bytes) {
  const size_t rounded = bytes == 0 ? alignment : (bytes + alignment - 1) / alignment * alignment;
  void* memory = std::aligned_alloc(alignment, rounded);
  if (!memory) throw std::bad_alloc();
  return memory;
}

}  // namespace moe
