// The kernel thread pool: every index once, chunk sizes honoured, exceptions carried back, nesting safe.
#include "kernels/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <stdexcept>
#include <vector>

namespace moe {
namespace {

TEST(ThreadPool, CoversEveryIndexExactlyOnceInChunksOfAtLeastMinChunk) {
  for (int64_t count : {1, 7, 64, 1000, 100003}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(count));
    std::mutex lock;
    std::vector<std::pair<int64_t, int64_t>> chunks;
    parallel_for(count, 10, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) hits[i].fetch_add(1);
      std::lock_guard<std::mutex> guard(lock);
      chunks.emplace_back(begin, end);
    });
    for (int64_t i = 0; i < count; ++i) ASSERT_EQ(hits[i].load(), 1) << "index " << i << " of " << count;
    for (const auto& [begin, end] : chunks)
      if (end != count) {
        EXPECT_GE(end - begin, 10) << "chunk [" << begin << ", " << end << ") of " << count;
      }
  }
}

TEST(ThreadPool, ZeroCountCallsNothing) {
  bool called = false;
  parallel_for(0, 1, [&](int64_t, int64_t) { called = true; });
  EXPECT_FALSE(called);
}

TEST(ThreadPool, RethrowsTheExceptionOfAChunkAfterAllChunksFinish) {
  std::atomic<int64_t> done{0};
  EXPECT_THROW(parallel_for(64, 1,
                            [&](int64_t begin, int64_t end) {
                              done.fetch_add(end - begin);
                              if (begin == 0) throw std::runtime_error("chunk 0 failed");
                            }),
               std::runtime_error);
  EXPECT_EQ(done.load(), 64);
  // The pool still works afterwards.
  std::atomic<int64_t> sum{0};
  parallel_for(100, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) sum.fetch_add(i);
  });
  EXPECT_EQ(sum.load(), 4950);
}

TEST(ThreadPool, NestedLoopsRunSeriallyAndComplete) {
  std::atomic<int64_t> total{0};
  parallel_for(8, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      parallel_for(100, 1, [&](int64_t b, int64_t e) { total.fetch_add(e - b); });
  });
  EXPECT_EQ(total.load(), 800);
}

TEST(ThreadPool, UsesAtLeastOneThread) { EXPECT_GE(kernel_threads(), 1); }

}  // namespace
}  // namespace moe
