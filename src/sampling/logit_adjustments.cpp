#include "sampling/logit_adjustments.h"

#include <algorithm>
#include <limits>
#include <string>
#include <unordered_map>

#include "common/error.h"

namespace moe {
namespace {

void check_id(int32_t id, int64_t vocab_size, const char* what) {
  if (id < 0 || id >= vocab_size)
    throw Error(std::string(what) + ": token id " + std::to_string(id) + " is outside the vocabulary");
}

}  // namespace

bool penalizes(const msg::DrawSettings& s) {
  return s.presence_penalty != 0.0f || s.frequency_penalty != 0.0f || s.repetition_penalty != 1.0f;
}

bool adjusts_logits(const msg::TokenSampling& s) {
  return penalizes(s) || !s.logit_bias.empty() || !s.suppressed_ids.empty();
}

void adjust_logits(const float* logits, int64_t vocab_size, const msg::TokenSampling& s, float* out) {
  std::copy(logits, logits + vocab_size, out);
  if (penalizes(s)) {
    // Only the generated tokens are touched: a count map keeps the pass proportional to the output.
    std::unordered_map<int32_t, int32_t> counts;
    for (int32_t id : s.generated_ids) {
      check_id(id, vocab_size, "generated_ids");
      ++counts[id];
    }
    for (const auto& [id, count] : counts) {
      float& l = out[id];
      l = l < 0.0f ? l * s.repetition_penalty : l / s.repetition_penalty;
      l -= s.frequency_penalty * static_cast<float>(count) + s.presence_penalty;
    }
  }
  for (const msg::TokenBias& bias : s.logit_bias) {
    check_id(bias.id, vocab_size, "logit_bias");
    out[bias.id] += bias.bias;
  }
  for (int32_t id : s.suppressed_ids) {
    check_id(id, vocab_size, "suppressed_ids");
    out[id] = -std::numeric_limits<float>::infinity();
  }
}

}  // namespace moe
