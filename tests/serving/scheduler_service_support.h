#pragma once
// Test only: a small SchedulerService setup driven message by message, with a worker that is only a
// function (the handshake and weight-update protocol tests).
#include <string>

#include "serving/scheduler_service.h"

namespace moe::testing {

// What the scripted worker reports: a 256-token pool, 64-token steps, no capture.
inline msg::WorkerSettings small_worker_settings(uint64_t fingerprint) {
  return {.model_fingerprint = fingerprint, .kv_slots = 257, .max_batch_tokens = 64, .capture_routing = false,
          .capture_router_weights = false, .ep_size = 1};
}

// A scheduler that expects `worker`.
inline SchedulerServiceOptions small_scheduler_options(const msg::WorkerSettings& worker) {
  SchedulerServiceOptions o;
  o.scheduler.max_total_tokens = 256;
  o.scheduler.chunked_prefill_size = 64;
  o.scheduler.context_length = 128;
  o.expected_stages = {worker};
  return o;
}

// A greedy request of six prompt tokens.
inline msg::TokenizedRequest six_token_request(const std::string& rid, int32_t max_new_tokens) {
  msg::TokenizedRequest r;
  r.rid = rid;
  r.input_ids = {1, 2, 3, 4, 5, 6};
  r.sampling.temperature = 0.0f;
  r.sampling.max_new_tokens = max_new_tokens;
  return r;
}

// The scripted worker's answer to `batch`: token 7 for every sequence that samples.
inline msg::WorkerResult sevens(const msg::WorkerBatch& batch, uint64_t instance) {
  msg::WorkerResult result;
  result.step = batch.step;
  result.worker_instance = instance;
  for (const msg::WorkerSequence& s : batch.sequences)
    if (s.needs_logits) result.sampled_ids.push_back(7);
  return result;
}

}  // namespace moe::testing
