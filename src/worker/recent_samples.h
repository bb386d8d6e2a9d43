#pragma once
// The tokens the latest steps sampled, by step: with overlapped scheduling the scheduler sends step
// n+1 before step n's result reaches it, naming the tokens step n samples as future tokens, and the
// worker takes them from here.
#include <cstdint>
#include <deque>
#include <span>
#include <utility>
#include <vector>

#include "moe/messages.h"

namespace moe {

class RecentSamples {
 public:
  void remember(uint64_t step, std::vector<int32_t> sampled_ids);
  // Writes every future token into token_ids. A step or sample not remembered (the step was never
  // run here, or ran too long ago) or a token index outside token_ids is a moe::Error: the step
  // must fail rather than feed a wrong token.
  void fill(std::vector<int32_t>& token_ids, std::span<const msg::FutureToken> futures) const;

 private:
  // Overlap needs the previous step only; a few more cost nothing and tolerate reordering.
  static constexpr size_t kStepsKept = 4;
  std::deque<std::pair<uint64_t, std::vector<int32_t>>> steps_;
};

}  // namespace moe
