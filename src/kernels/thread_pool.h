#pragma once
// Spreads a kernel's work over the machine's cores: a fixed set of worker threads, started once,
// that the calling thread joins for each parallel loop. Decode is bound by memory bandwidth and
// prefill by FMA throughput, and one core reaches neither machine limit alone.
#include <cstdint>
#include <functional>

namespace moe {

// Threads a parallel loop uses, the caller included: $MOE_NUM_THREADS when set (1 = everything
// serial), else every core.
int kernel_threads();

// Calls body(begin, end) over consecutive chunks of [0, count) of at least min_chunk items each
// (the last may be shorter), spread over the pool; returns when all are done. Chunks are handed out
// dynamically, so a thread the OS descheduled does not hold the others up. A call from inside a
// chunk, or while another thread's loop holds the pool, runs serially on the calling thread. The
// first exception a chunk throws is rethrown here once every chunk has finished.
void parallel_for(int64_t count, int64_t min_chunk, const std::function<void(int64_t begin, int64_t end)>& body);

}  // namespace moe
