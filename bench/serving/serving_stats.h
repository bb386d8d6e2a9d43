#pragma once
// The figures a serving benchmark reports, computed from the requests' records.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "serving/load_generator.h"

namespace moe::bench {

// One latency's distribution, in milliseconds.
struct LatencyStats {
  double mean_ms = 0, p50_ms = 0, p99_ms = 0;
};

// What one run measured.
struct ServingStats {
  int completed = 0, failed = 0;
  std::string first_error;        // the first failed request's message, for the report
  double duration_s = 0;
  double request_throughput = 0;  // completed requests / s
  int64_t output_tokens = 0;      // generated tokens of the completed requests
  double output_throughput = 0;   // generated tokens / s
  int64_t prompt_tokens = 0;      // prompt tokens of the completed requests
  double prompt_throughput = 0;   // prompt tokens / s
  LatencyStats ttft, itl;         // time to first token; gaps between consecutive tokens
};

// The figures of a run's records; a request with an error or without tokens counts as failed.
ServingStats summarize(const std::vector<RequestRecord>& records, double duration_seconds);
// The figures as moe-bench's --output-json writes them.
nlohmann::json to_json(const ServingStats& stats);

}  // namespace moe::bench
