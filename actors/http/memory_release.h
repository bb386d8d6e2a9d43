#pragma once
// Giving back the memory a large request took. Parsing a body of megabytes allocates a node for each
// JSON value, and its prompts are copied into requests; once they are freed the allocator keeps the
// pages resident for reuse, so a burst of large bodies would leave the server that much bigger for
// good. Trimming walks the heap, so it is done only once a request of at least kTrimAfterBodyBytes
// has been answered.
#include <cstddef>

namespace moe::http {

inline constexpr size_t kTrimAfterBodyBytes = 1u << 20;

// Returns the allocator's free pages to the system when a request of `body_bytes` has just been
// answered (a no-op below kTrimAfterBodyBytes, and where the C library cannot trim).
void release_memory_after_request(size_t body_bytes);

}  // namespace moe::http
