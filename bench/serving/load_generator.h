#pragma once
// Drives a running moe-serve over its ZeroMQ client protocol (docs/zmq-protocol.md): streamed
// requests of random prompt ids, sent at a fixed concurrency or at a Poisson rate, with the time of
// every chunk recorded for TTFT and inter-token latency.
#include <cstdint>
#include <string>
#include <vector>

namespace moe::bench {

struct LoadOptions {
  std::string endpoint = "tcp://127.0.0.1:30001";
  int num_prompts = 64;           // measured requests
  int warmup_prompts = 4;         // sent first, not measured
  int input_len = 128;            // prompt tokens
  int output_len = 128;           // generated tokens (ignore_eos)
  int concurrency = 1;            // requests in flight at most
  double request_rate = 0;        // requests/s drawn from a Poisson process; 0 = send as soon as a slot frees
  int vocab_size = 151643;        // prompt ids are drawn from [0, vocab_size)
  bool return_routed_experts = false;
  uint64_t seed = 0;
};

// What one request saw, in seconds since the run started.
struct RequestRecord {
  double sent = 0;
  std::vector<double> token_times;  // arrival time of every generated token (a chunk's tokens share it)
  double finished = 0;
  std::string error;                // empty on success
};

// Runs the warm-up, then the measured requests; returns the measured ones and the run's duration.
std::vector<RequestRecord> run_load(const LoadOptions& options, double& duration_seconds);

}  // namespace moe::bench
