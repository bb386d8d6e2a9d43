#pragma once
// The numbers the server reports: GET /metrics, as a plain struct the engine frontend fills and
// its rendering in Prometheus' text exposition format (version 0.0.4); and GET /expert_load, the
// expert-load statistics as JSON.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "moe/client.h"

namespace moe::api {

// A Prometheus histogram: how many observations fell at or under each upper bound, their sum and count.
class Histogram {
 public:
  // `upper_bounds` ascending; the +Inf bucket is implied.
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double value);

  const std::vector<double>& upper_bounds() const { return upper_bounds_; }
  // Per bucket, not cumulative: [i] counts values in (bound[i-1], bound[i]]; the last, those above every bound.
  const std::vector<uint64_t>& bucket_counts() const { return bucket_counts_; }
  double sum() const { return sum_; }
  uint64_t count() const { return count_; }

 private:
  std::vector<double> upper_bounds_;
  std::vector<uint64_t> bucket_counts_;
  double sum_ = 0.0;
  uint64_t count_ = 0;
};

// Buckets for the time of one scheduler step (a forward pass): 1 ms to 10 s.
Histogram step_time_histogram();

// Request latencies (request_latency.h): time to first output and end to end (10 ms to 5 min), and
// between tokens (1 ms to 10 s).
struct LatencyHistograms {
  Histogram ttft_seconds = request_time_histogram();
  Histogram inter_token_seconds = step_time_histogram();
  Histogram e2e_seconds = request_time_histogram();

  static Histogram request_time_histogram();
};

// Counters since start and gauges now.
struct ServerStats {
  uint64_t requests_total = 0;           // generation requests received
  uint64_t prompt_tokens_total = 0;      // prompt tokens processed
  uint64_t generation_tokens_total = 0;  // tokens generated
  uint64_t cached_tokens_total = 0;      // prompt tokens served from the prefix cache
  int64_t running_requests = 0;
  int64_t waiting_requests = 0;
  int64_t kv_slots_used = 0;
  int64_t kv_slots_total = 0;
  Histogram step_time_seconds = step_time_histogram();
  uint64_t capture_bytes_total = 0;       // routed-experts bytes copied from the device
  int64_t capture_host_cache_bytes = 0;   // size of the routing host cache
  // Speculative decoding: draft trees verified, their draft tokens, the drafts accepted; distinct
  // experts the verifying steps used summed over steps and MoE layers, and the (step, layer) pairs.
  uint64_t spec_verify_passes_total = 0;
  uint64_t spec_draft_tokens_total = 0;
  uint64_t spec_accepted_drafts_total = 0;
  uint64_t spec_verify_distinct_experts_total = 0;
  uint64_t spec_verify_layer_passes_total = 0;
  uint64_t overlapped_tokens_total = 0;   // decode tokens planned before their step's result
  LatencyHistograms latencies;
  std::string weight_version;             // of the weights serving now: a label of moe_weight_version_info
};

// What the server's periodic log line reports, as SGLang's: the batch now and the generation
// throughput over the last interval.
struct PeriodicStats {
  int64_t running_requests = 0;
  int64_t waiting_requests = 0;
  int64_t kv_slots_used = 0;
  int64_t kv_slots_total = 0;
  uint64_t tokens_generated = 0;  // during the interval
  double interval_seconds = 0.0;
};

// "#running-req: 2, #queue-req: 0, #token: 310, token usage: 0.08, gen throughput (token/s): 41.20".
std::string periodic_stats_line(const PeriodicStats& stats);

// The /metrics body; every sample carries the label model_name="<model_name>".
std::string render_prometheus(const ServerStats& stats, const std::string& model_name);

// Expert-load statistics: how many tokens the router sent to each expert of each MoE
// layer since start (or the last reset); the input of load-balanced expert placement. Served as
// JSON over HTTP; the ZeroMQ client protocol sends the same fields as msgpack. ExpertLoad is the
// public struct the C++ client returns: counts[moe layer][expert] and the tokens counted.
using ExpertLoad = moe::ExpertLoad;

// {"num_moe_layers": L, "num_experts": E, "tokens": T, "counts": [[...], ...]}.
nlohmann::json expert_load_json(const ExpertLoad& load);

}  // namespace moe::api
