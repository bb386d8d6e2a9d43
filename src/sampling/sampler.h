#pragma once
// Picks the next token from one row of logits: greedy, or temperature with top-k, top-p and min-p.
#include <cstdint>

#include "sampling/sampling_params.h"

namespace moe {

// The chosen token and its log-probability under the model (log_softmax of the raw logits, before
// temperature or any filter: what the goldens and the OpenAI `logprobs` field report).
struct SampledToken {
  int32_t id = 0;
  float logprob = 0.0f;
};

// `sampling.step` numbers the request's draws (its output-token index): the random draw is a
// function of (sampling.seed, sampling.step) only, so recomputing a request reproduces its tokens.
// Greedy ties go to the lowest id. Filters apply as Hugging Face orders them: top-k, then top-p on
// the renormalised survivors, then min-p. Throws a moe::Error for invalid settings.
SampledToken sample_token(const float* logits, int64_t vocab_size, const msg::TokenSampling& sampling);

}  // namespace moe
