#pragma once
// One generation request inside the scheduler: what the client asked for, and the scheduler's state
// for it (outputs so far, its KV slots, how much of it is already in the KV cache).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sampling/sampling_params.h"
#include "scheduler/finish_reason.h"
#include "scheduler/radix_cache.h"
#include "scheduler/stop_conditions.h"

namespace moe {

// Where a request is: Parked = a completion of an n > 1 request waiting for its first sibling's
// prompt to reach the prefix cache; Waiting/Running = the scheduler's two queues.
enum class RequestState { Parked, Waiting, Running };

struct Request {
  // --- What the client asked for.
  std::string rid;
  std::vector<int32_t> prompt_ids;
  SamplingParams sampling;       // sampling.seed is overwritten by the effective seed at add_request
  std::optional<uint64_t> seed;  // the client's seed; none = the scheduler draws one (see add_request)
  StopConditions stop;
  int n = 1;                     // completions of the same prompt
  bool return_routed_experts = false;
  // routed_experts_include_last: once a stop condition is met, feed the last output token one more
  // time (no sampling) so its routing row exists, then finish.
  bool route_last_token = false;

  // --- Filled in by the scheduler.
  int index = 0;     // which of the n completions this is
  uint64_t uid = 0;  // unique over the scheduler's life, so a stale batch entry never hits a new request
  RequestState state = RequestState::Waiting;
  std::vector<int32_t> output_ids;
  std::vector<float> output_logprobs;
  std::vector<int32_t> slot_table;  // req_to_token: KV slot of position i (prompt then output)
  int64_t num_computed = 0;         // positions [0, num_computed) have their KV in slot_table
  int64_t num_cache_owned = 0;      // positions [0, num_cache_owned) use slots the radix cache owns
  RadixCache::Node* cache_node = nullptr;  // the locked radix node covering those positions
  int64_t prefill_end = 0;          // total_len() when last admitted: chunks below it are prefill
  uint64_t scheduled_step = 0;      // the last step that included this request
  int64_t cached_tokens = 0;        // prefix-cache hit tokens summed over admissions (meta_info)
  int num_preemptions = 0;
  // A route_last_token request that met its stop condition: the reason it will finish with once
  // the last output token has been fed.
  std::optional<FinishReason> finishing;

  int64_t prompt_len() const { return static_cast<int64_t>(prompt_ids.size()); }
  int64_t total_len() const { return prompt_len() + static_cast<int64_t>(output_ids.size()); }
  // Tokens of positions [begin, end) of prompt followed by output.
  std::vector<int32_t> tokens(int64_t begin, int64_t end) const;
};

}  // namespace moe
