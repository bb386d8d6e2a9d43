#include "kernels/thread_pool.h"

#include "common/thread_name.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace moe {
namespace {

// Spins this many pause instructions (a few tens of microseconds) before sleeping: kernels of a
// decode step follow each other faster than a futex wake-up.
constexpr int kSpinPauses = 4000;
// Chunks per thread when the work allows: enough for the dynamic hand-out to even out stragglers.
constexpr int64_t kChunksPerThread = 4;

thread_local bool inside_parallel_chunk = false;

class ThreadPool {
 public:
  explicit ThreadPool(int threads) : threads_(threads) {
    for (int i = 1; i < threads_; ++i)
      workers_.emplace_back([this] {
        name_this_thread("kernel-thread");
        work();
      });
  }

  ~ThreadPool() {
    stopping_.store(true);
    start_loop();
    for (std::thread& worker : workers_) worker.join();
  }

  int threads() const { return threads_; }

  void run(int64_t count, int64_t min_chunk, const std::function<void(int64_t, int64_t)>& body) {
    const int64_t chunk_size = std::max<int64_t>(
        std::max<int64_t>(min_chunk, 1), (count + threads_ * kChunksPerThread - 1) / (threads_ * kChunksPerThread));
    const int64_t num_chunks = (count + chunk_size - 1) / chunk_size;
    std::unique_lock<std::mutex> lock(dispatch_, std::try_to_lock);
    if (num_chunks <= 1 || threads_ == 1 || inside_parallel_chunk || !lock.owns_lock()) {
      body(0, count);
      return;
    }
    body_ = &body;
    count_ = count;
    chunk_size_ = chunk_size;
    num_chunks_ = num_chunks;
    error_ = nullptr;
    next_chunk_.store(0);
    busy_workers_.store(static_cast<int>(workers_.size()));
    start_loop();
    run_chunks();
    for (int spins = 0; busy_workers_.load(std::memory_order_acquire) != 0; ++spins) {
      if (spins < kSpinPauses)
        _mm_pause();
      else
        std::this_thread::yield();
    }
    if (error_) std::rethrow_exception(error_);
  }

 private:
  // Wakes the workers: the spinning ones see the new generation, the sleeping ones are notified.
  // (Both sides use sequentially consistent operations on generation_ and sleepers_, so either
  // the dispatcher sees a sleeper or the sleeper sees the new generation.)
  void start_loop() {
    generation_.fetch_add(1);
    if (sleepers_.load() == 0) return;
    std::lock_guard<std::mutex> guard(sleep_lock_);
    wake_.notify_all();
  }

  // Takes chunks until none are left; records the first exception.
  void run_chunks() {
    inside_parallel_chunk = true;
    for (int64_t chunk = next_chunk_.fetch_add(1); chunk < num_chunks_; chunk = next_chunk_.fetch_add(1)) {
      const int64_t begin = chunk * chunk_size_;
      try {
        (*body_)(begin, std::min(count_, begin + chunk_size_));
      } catch (...) {
        std::lock_guard<std::mutex> guard(error_lock_);
        if (!error_) error_ = std::current_exception();
      }
    }
    inside_parallel_chunk = false;
  }

  void work() {
    // Generation 0 is the pool's state at construction: a loop started before this thread ran
    // still counts as new to it.
    uint64_t seen = 0;
    while (true) {
      for (int spins = 0; generation_.load(std::memory_order_acquire) == seen; ++spins) {
        if (spins < kSpinPauses) {
          _mm_pause();
          continue;
        }
        std::unique_lock<std::mutex> lock(sleep_lock_);
        sleepers_.fetch_add(1);
        wake_.wait(lock, [&] { return generation_.load() != seen; });
        sleepers_.fetch_sub(1);
      }
      seen = generation_.load(std::memory_order_acquire);
      if (stopping_.load()) return;
      run_chunks();
      busy_workers_.fetch_sub(1, std::memory_order_release);
    }
  }

  const int threads_;
  std::vector<std::thread> workers_;
  std::mutex dispatch_;  // one loop at a time; a second caller runs its loop serially
  std::atomic<uint64_t> generation_{0};  // bumped once per loop
  std::atomic<int> sleepers_{0};          // workers blocked on wake_
  std::mutex sleep_lock_;
  std::condition_variable wake_;
  std::atomic<bool> stopping_{false};
  std::atomic<int64_t> next_chunk_{0};
  std::atomic<int> busy_workers_{0};
  // The current loop, written by the dispatching thread before generation_ is bumped.
  const std::function<void(int64_t, int64_t)>* body_ = nullptr;
  int64_t count_ = 0, chunk_size_ = 0, num_chunks_ = 0;
  std::mutex error_lock_;
  std::exception_ptr error_;
};

int configured_threads() {
  if (const char* value = std::getenv("MOE_NUM_THREADS")) {
    const int threads = std::atoi(value);
    if (threads >= 1) return threads;
  }
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

ThreadPool& pool() {
  static ThreadPool instance(configured_threads());
  return instance;
}

}  // namespace

int kernel_threads() { return pool().threads(); }

void parallel_for(int64_t count, int64_t min_chunk, const std::function<void(int64_t begin, int64_t end)>& body) {
  if (count <= 0) return;
  pool().run(count, min_chunk, body);
}

}  // namespace moe
