#include "http/memory_release.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace moe::http {

void release_memory_after_request(size_t body_bytes) {
  if (body_bytes < kTrimAfterBodyBytes) return;
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

}  // namespace moe::http
