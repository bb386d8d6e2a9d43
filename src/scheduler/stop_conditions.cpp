#include "scheduler/stop_conditions.h"

#include <algorithm>

namespace moe {

std::optional<FinishReason> StopConditions::check(int32_t token, int64_t num_output_tokens) const {
  auto contains = [token](const std::vector<int32_t>& ids) {
    return std::find(ids.begin(), ids.end(), token) != ids.end();
  };
  if ((!ignore_eos && contains(eos_token_ids)) || contains(stop_token_ids)) return FinishReason::stop_token(token);
  if (num_output_tokens >= max_new_tokens) return FinishReason::length();
  return std::nullopt;
}

}  // namespace moe
