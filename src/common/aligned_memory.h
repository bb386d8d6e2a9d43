#pragma once
// Arrays from std::aligned_alloc, owned by a unique_ptr that hands them back with std::free: the
// KV cache aligns its rows to cache lines, the weight arena its slabs to huge pages.
#include <cstddef>
#include <memory>

namespace moe {

struct FreeDeleter {
  void operator()(void* p) const;
};

template <class T>
using AlignedArray = std::unique_ptr<T[], FreeDeleter>;

// count uninitialised Ts at an address that is a multiple of alignment (a power of two, at least
// alignof(T)); the size is rounded up to a multiple of it, as aligned_alloc requires. Throws
// std::bad_alloc.
void* aligned_allocate(size_t alignment, size_t bytes);

template <class T>
AlignedArray<T> aligned_array(size_t alignment, size_t count) {
  return AlignedArray<T>(static_cast<T*>(aligned_allocate(alignment, count * sizeof(T))));
}

}  // namespace moe
