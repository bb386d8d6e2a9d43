#pragma once
// The token-level stop conditions the scheduler checks after every sampled token. Stop strings
// need text, so the detokenizer checks those and tells the scheduler (Scheduler::stop_at_output).
#include <cstdint>
#include <optional>
#include <vector>

#include "scheduler/finish_reason.h"

namespace moe {

struct StopConditions {
  int32_t max_new_tokens = 128;
  std::vector<int32_t> eos_token_ids;   // the model's end-of-sequence ids
  std::vector<int32_t> stop_token_ids;  // extra ids from the request
  // Keep generating past EOS ids (explicit stop_token_ids still stop, as in vLLM).
  bool ignore_eos = false;

  // The reason to stop after `token` was sampled as output number `num_output_tokens`, if any.
  // A stop token wins over reaching the length limit on the same token.
  std::optional<FinishReason> check(int32_t token, int64_t num_output_tokens) const;
};

}  // namespace moe
