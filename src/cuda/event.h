#pragma once
// A CUDA event owned by one object: what orders work across streams (a stream waits for an event
// another recorded) and, when made with timing, what device timestamps are read from.
#include <utility>

#include "cuda/device.h"

namespace moe::cuda {

class Event {
 public:
  enum class Timing { Off, On };

  // Timing::Off records and waits faster: the event then only orders work.
  explicit Event(Timing timing = Timing::Off) {
    check(cudaEventCreateWithFlags(&event_, timing == Timing::On ? cudaEventDefault : cudaEventDisableTiming),
          "cudaEventCreateWithFlags");
  }
  ~Event() {
    if (event_) cudaEventDestroy(event_);
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  Event(Event&& other) noexcept : event_(other.event_) { other.event_ = nullptr; }
  Event& operator=(Event&& other) noexcept {
    std::swap(event_, other.event_);
    return *this;
  }

  cudaEvent_t get() const { return event_; }
  void record(cudaStream_t stream) { check(cudaEventRecord(event_, stream), "cudaEventRecord"); }
  // Whether every piece of work the last record() followed has finished; never blocks.
  bool done() const;
  void synchronize() const { check(cudaEventSynchronize(event_), "cudaEventSynchronize"); }

 private:
  cudaEvent_t event_ = nullptr;
};

// Milliseconds from `from` to `to`, both recorded with timing and completed.
float elapsed_ms(const Event& from, const Event& to);

}  // namespace moe::cuda
