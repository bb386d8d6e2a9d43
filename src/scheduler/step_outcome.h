#pragma once
// What the scheduler reports after a step's result (and on abort): the tokens each request gained
// and the requests that finished, for the detokenizer.
#include <cstdint>
#include <string>
#include <vector>

#include "scheduler/finish_reason.h"

namespace moe {

// One sampled token of one completion.
struct GeneratedToken {
  std::string rid;
  int index = 0;
  int32_t token = 0;
  float logprob = 0.0f;
};

// A completion that is done, with everything the reply needs.
struct FinishedRequest {
  std::string rid;
  int index = 0;
  FinishReason reason;
  int64_t prompt_len = 0;
  std::vector<int32_t> output_ids;
  std::vector<float> output_logprobs;
  int64_t cached_tokens = 0;  // prefix-cache hit tokens (meta_info.cached_tokens)
  int num_preemptions = 0;
  bool return_routed_experts = false;
  // KV slot of each position whose KV was computed (prompt_len + outputs - 1 when it ran to the
  // end, one more with route_last_token): where its routed-experts rows sit in the host cache.
  // Valid until the next schedule_step.
  std::vector<int32_t> kv_slots;
};

struct StepOutcome {
  std::vector<GeneratedToken> tokens;
  std::vector<FinishedRequest> finished;
};

}  // namespace moe
