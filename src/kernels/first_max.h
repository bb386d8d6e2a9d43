#pragma once
// The index of a row's largest value, eight lanes at a time: greedy sampling's pick over a whole
// vocabulary, where std::max_element's scalar loop cost a GPU worker more per decode step than
// the model's lm_head.
#include <cstdint>

namespace moe {

// The lowest index of x's maximum over n > 0 values, as std::max_element answers, except that a
// NaN is never picked (max_element would pick one in the first place); a row with nothing above
// -infinity gives 0.
int64_t first_max(const float* x, int64_t n);

}  // namespace moe
