#pragma once
// How long requests take, as /metrics reports them and --log-requests logs them: time to the first
// output (TTFT), time between outputs per token (inter-token latency) and end to end, all from the
// request's arrival at the front door. Bookkeeping on times the caller passes in, so it is tested
// without a clock. A non-streamed request's first output is its whole reply: its TTFT is its e2e time.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "api/server_stats.h"
#include "moe/messages.h"

namespace moe::api {

using SteadyTime = std::chrono::steady_clock::time_point;

// One request (all its completions) from arrival to its end.
class RequestTiming {
 public:
  explicit RequestTiming(SteadyTime arrival) : arrival_(arrival) {}

  // Records `output` (of any completion), arrived at `now`, into `latencies`.
  void observe(const msg::TextOutput& output, SteadyTime now, LatencyHistograms& latencies);
  // The request's last output has been observed: records its end-to-end latency.
  void end(LatencyHistograms& latencies) const { latencies.e2e_seconds.observe(e2e_seconds()); }
  double ttft_seconds() const;
  double e2e_seconds() const;

 private:
  SteadyTime arrival_;
  std::optional<SteadyTime> first_output_, last_output_;
};

// The --log-requests line of a finished request, from its last output:
// "request rid=... prompt_tokens=... completion_tokens=... cached_tokens=... ttft=0.012s e2e=0.340s finish=length".
std::string request_log_line(const msg::TextOutput& last, const RequestTiming& timing);

}  // namespace moe::api
