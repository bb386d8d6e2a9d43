#pragma once
// The one interface moe-bench's load generator drives: a way to send streamed generation requests
// to moe-serve and to collect what comes back, chunk by chunk, with arrival times. ZeroMQ and HTTP
// implement it; scheduling (concurrency, Poisson rate, warm-up, timeouts) is written once above it.
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace moe::bench {

// One generation request as every transport sends it: ignore_eos, streamed, greedy unless a
// temperature is given (a rollout samples at 1).
struct BenchRequest {
  std::vector<int32_t> input_ids;
  int output_len = 0;                  // max_new_tokens
  bool return_routed_experts = false;
  double temperature = 0;
};

// Something that arrived for one request: new tokens, or its end (with an error or not).
struct StreamEvent {
  uint64_t request = 0;                            // the id it was sent with
  std::chrono::steady_clock::time_point at;        // when the transport received it
  int new_tokens = 0;
  bool finished = false;                           // nothing more will come for this request
  std::string error;                               // set on a failed request's last event
};

// A connection to one server that carries many requests at once on one thread.
class StreamingTransport {
 public:
  using Clock = std::chrono::steady_clock;

  virtual ~StreamingTransport() = default;

  // Starts request `id` (unique over the transport's life); its chunks come back from wait().
  virtual void send(uint64_t id, const BenchRequest& request) = 0;

  // Blocks until at least one event has arrived or `deadline` has passed, then appends every event
  // that has arrived to `events`. Returns at once when no request is in flight.
  virtual void wait(Clock::time_point deadline, std::vector<StreamEvent>& events) = 0;

  // Gives up request `id`: no event comes for it afterwards.
  virtual void cancel(uint64_t id) = 0;
};

}  // namespace moe::bench
