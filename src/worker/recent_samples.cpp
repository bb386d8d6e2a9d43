#include "worker/recent_samples.h"

#include <algorithm>
#include <string>

#include "common/error.h"

namespace moe {

void RecentSamples::remember(uint64_t step, std::vector<int32_t> sampled_ids) {
  steps_.emplace_back(step, std::move(sampled_ids));
  if (steps_.size() > kStepsKept) steps_.pop_front();
}

void RecentSamples::fill(std::vector<int32_t>& token_ids, std::span<const msg::FutureToken> futures) const {
  for (const msg::FutureToken& future : futures) {
    const auto step = std::find_if(steps_.begin(), steps_.end(), [&](const auto& s) { return s.first == future.step; });
    if (step == steps_.end())
      throw Error("a step feeds a token sampled by step " + std::to_string(future.step) +
                  ", which this model worker did not run just before");
    if (future.sample < 0 || static_cast<size_t>(future.sample) >= step->second.size())
      throw Error("a step feeds sample " + std::to_string(future.sample) + " of step " + std::to_string(future.step) +
                  ", which sampled " + std::to_string(step->second.size()) + " tokens");
    if (future.token_index < 0 || static_cast<size_t>(future.token_index) >= token_ids.size())
      throw Error("a future token at index " + std::to_string(future.token_index) + " of a step of " +
                  std::to_string(token_ids.size()) + " tokens");
    token_ids[static_cast<size_t>(future.token_index)] = step->second[static_cast<size_t>(future.sample)];
  }
}

}  // namespace moe
