#pragma once
// What a request changes in a row of logits before its token is drawn: SGLang's penalties over the
// tokens generated so far, OpenAI's logit_bias, and min_new_tokens' ban on stop tokens.
#include <cstdint>

#include "moe/messages.h"

namespace moe {

// True when a presence, frequency or repetition penalty is set (the draw then needs the tokens
// generated so far).
bool penalizes(const msg::DrawSettings& sampling);

// True when `sampling` changes the logits at all (the draw then reads an adjusted copy).
bool adjusts_logits(const msg::TokenSampling& sampling);

// out[0, vocab_size) = logits adjusted, in SGLang's (and vLLM's) order. With c(t) the number of times
// t occurs in sampling.generated_ids:
//   where c(t) > 0:  l = l < 0 ? l * repetition_penalty : l / repetition_penalty
//   l -= frequency_penalty * c(t) + presence_penalty * (c(t) > 0)
//   l += logit_bias[t]
//   l = -inf for t in suppressed_ids
// Ids outside the vocabulary are a moe::Error (the front door refuses them first).
void adjust_logits(const float* logits, int64_t vocab_size, const msg::TokenSampling& sampling, float* out);

}  // namespace moe
