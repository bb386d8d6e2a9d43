#include "serving/serving_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace moe::bench {
namespace {

// Nearest-rank percentile of sorted values.
double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

LatencyStats latency(std::vector<double> seconds) {
  LatencyStats stats;
  if (seconds.empty()) return stats;
  std::sort(seconds.begin(), seconds.end());
  stats.mean_ms = 1000.0 * std::accumulate(seconds.begin(), seconds.end(), 0.0) / static_cast<double>(seconds.size());
  stats.p50_ms = 1000.0 * percentile(seconds, 50);
  stats.p99_ms = 1000.0 * percentile(seconds, 99);
  return stats;
}

nlohmann::json to_json(const LatencyStats& stats) {
  return {{"mean_ms", stats.mean_ms}, {"p50_ms", stats.p50_ms}, {"p99_ms", stats.p99_ms}};
}

}  // namespace

ServingStats summarize(const std::vector<RequestRecord>& records, double duration_seconds) {
  ServingStats stats;
  stats.duration_s = duration_seconds;
  std::vector<double> ttft, itl;
  for (const RequestRecord& r : records) {
    if (!r.error.empty() || r.token_times.empty()) {
      if (stats.failed++ == 0) stats.first_error = r.error.empty() ? "no tokens received" : r.error;
      continue;
    }
    ++stats.completed;
    stats.output_tokens += static_cast<int64_t>(r.token_times.size());
    stats.prompt_tokens += r.prompt_tokens;
    ttft.push_back(r.token_times.front() - r.sent);
    for (size_t i = 1; i < r.token_times.size(); ++i) itl.push_back(r.token_times[i] - r.token_times[i - 1]);
  }
  if (duration_seconds > 0) {
    stats.request_throughput = stats.completed / duration_seconds;
    stats.output_throughput = static_cast<double>(stats.output_tokens) / duration_seconds;
    stats.prompt_throughput = static_cast<double>(stats.prompt_tokens) / duration_seconds;
  }
  stats.ttft = latency(std::move(ttft));
  stats.itl = latency(std::move(itl));
  return stats;
}

nlohmann::json to_json(const ServingStats& stats) {
  return {{"completed", stats.completed},
          {"failed", stats.failed},
          {"first_error", stats.first_error},
          {"duration_s", stats.duration_s},
          {"request_throughput", stats.request_throughput},
          {"output_tokens", stats.output_tokens},
          {"output_throughput", stats.output_throughput},
          {"prompt_tokens", stats.prompt_tokens},
          {"prompt_throughput", stats.prompt_throughput},
          {"ttft", to_json(stats.ttft)},
          {"itl", to_json(stats.itl)}};
}

}  // namespace moe::bench
