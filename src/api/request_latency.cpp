#include "api/request_latency.h"

#include <cstdio>

namespace moe::api {
namespace {

double seconds_between(SteadyTime from, SteadyTime to) { return std::chrono::duration<double>(to - from).count(); }

const char* finish_name(const std::optional<msg::FinishReason>& reason) {
  if (!reason) return "none";
  switch (reason->kind) {
    case msg::FinishKind::Stop: return "stop";
    case msg::FinishKind::Length: return "length";
    case msg::FinishKind::Abort: return "abort";
  }
  return "none";
}

}  // namespace

void RequestTiming::observe(const msg::TextOutput& output, SteadyTime now, LatencyHistograms& latencies) {
  if (!first_output_) {
    first_output_ = now;
    latencies.ttft_seconds.observe(seconds_between(arrival_, now));
  } else if (!output.output_ids.empty()) {
    // The gap since the previous output, shared by the tokens this one brings.
    const double per_token = seconds_between(*last_output_, now) / static_cast<double>(output.output_ids.size());
    for (size_t i = 0; i < output.output_ids.size(); ++i) latencies.inter_token_seconds.observe(per_token);
  }
  last_output_ = now;
}

double RequestTiming::ttft_seconds() const { return first_output_ ? seconds_between(arrival_, *first_output_) : 0.0; }

double RequestTiming::e2e_seconds() const { return last_output_ ? seconds_between(arrival_, *last_output_) : 0.0; }

std::string request_log_line(const msg::TextOutput& last, const RequestTiming& timing) {
  char times[96];
  std::snprintf(times, sizeof times, "ttft=%.3fs e2e=%.3fs", timing.ttft_seconds(), timing.e2e_seconds());
  return "request rid=" + last.rid + " prompt_tokens=" + std::to_string(last.prompt_tokens) +
         " completion_tokens=" + std::to_string(last.completion_tokens) +
         " cached_tokens=" + std::to_string(last.cached_tokens) + " " + times + " finish=" + finish_name(last.finish_reason);
}

}  // namespace moe::api
