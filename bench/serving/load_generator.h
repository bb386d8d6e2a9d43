#pragma once
// Drives a running moe-serve through a StreamingTransport: streamed requests of random prompt ids,
// sent at a fixed concurrency or at a Poisson rate after a warm-up, with the arrival time of every
// token recorded for TTFT and inter-token latency.
#include <cstdint>
#include <string>
#include <vector>

#include "serving/bench_transport.h"

namespace moe::bench {

struct LoadOptions {
  int num_prompts = 64;           // measured requests
  int warmup_prompts = 4;         // sent first, not measured
  int input_len = 128;            // prompt tokens
  int output_len = 128;           // generated tokens (ignore_eos)
  double temperature = 0;         // 0: greedy; a rollout samples at 1
  int concurrency = 1;            // requests in flight at most
  double request_rate = 0;        // requests/s drawn from a Poisson process; 0 = send as soon as a slot frees
  int vocab_size = 151643;        // prompt ids are drawn from [0, vocab_size)
  bool return_routed_experts = false;
  uint64_t seed = 0;
  double request_timeout_s = 600; // a request not finished this long after it was sent fails
};

// What one request saw, in seconds since the run started.
struct RequestRecord {
  double sent = 0;
  std::vector<double> token_times;  // arrival time of every generated token (a chunk's tokens share it)
  double finished = 0;
  std::string error;                // empty on success
  int prompt_tokens = 0;
};

// Runs the warm-up, then the measured requests, over `transport` (a fresh one per run: request ids
// start at 0); returns the measured requests and the run's duration. A request that fails or times
// out is recorded with its error and the run goes on.
std::vector<RequestRecord> run_load(StreamingTransport& transport, const LoadOptions& options,
                                    double& duration_seconds);

}  // namespace moe::bench
