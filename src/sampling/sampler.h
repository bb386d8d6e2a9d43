#pragma once
// Picks the next token from one row of logits: greedy, or temperature with top-k, top-p and min-p;
// with the range checks of a draw's settings and the stateless randomness the draw uses.
#include <cstdint>

#include "moe/messages.h"

namespace moe {

// The range checks of a token draw's settings, shared by the front door's request validation and
// the sampler: throws a moe::Error naming the first field outside its range (a bad request, not an
// engine fault).
void validate(const msg::DrawSettings& draw);

// A uniform double in [0, 1) for draw number `counter` of the stream named by `seed`. Stateless: a
// draw is a pure function of (seed, counter), so a request that is preempted and recomputed draws
// the same numbers and the worker keeps no generator state between steps.
double counter_uniform(uint64_t seed, uint64_t counter);

// The most alternatives a draw reports (OpenAI's top_logprobs limit).
inline constexpr int32_t kMaxTopLogprobs = 20;

// The chosen token and its log-probability under the model (log_softmax of the raw logits, before
// temperature, penalties or any filter: what the goldens and the OpenAI `logprobs` field report),
// and, when asked, the most probable tokens under the same log-probabilities (ties: lower id first,
// so a greedy draw's token is the first, with the same logprob).
struct SampledToken {
  int32_t id = 0;
  float logprob = 0.0f;
  msg::TokenAlternatives top;
};

// `sampling.step` numbers the request's draws (its output-token index): the random draw is a
// function of (sampling.seed, sampling.step) only, so recomputing a request reproduces its tokens.
// Greedy ties go to the lowest id. Filters apply as Hugging Face orders them: top-k, then top-p on
// the renormalised survivors, then min-p, all over the row as the request's penalties, logit_bias
// and suppressed ids adjust it. Throws a moe::Error for invalid settings.
SampledToken sample_token(const float* logits, int64_t vocab_size, const msg::TokenSampling& sampling);

// A given token's log-probability under a row of logits and the row's `top_logprobs` most probable
// tokens, exactly as sample_token reports them (prompt logprobs: the prompt's next token at each
// position). A token outside the vocabulary or top_logprobs outside [0, 20] is a moe::Error.
SampledToken token_logprob(const float* logits, int64_t vocab_size, int32_t token, int32_t top_logprobs);

}  // namespace moe
