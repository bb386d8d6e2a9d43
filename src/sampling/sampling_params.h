#pragma once
// A request's sampling settings, as SGLang and vLLM spell them.
#include <cstdint>

namespace moe {

struct SamplingParams {
  float temperature = 1.0f;  // 0 = greedy
  float top_p = 1.0f;        // keep the smallest most-probable set whose mass reaches top_p; in (0, 1]
  int top_k = -1;            // keep the k most probable tokens; -1 or 0 = off
  float min_p = 0.0f;        // drop tokens less probable than min_p × the top token's probability; in [0, 1]
  uint64_t seed = 0;         // with the step index, fixes every random draw of the request
};

// Throws a moe::Error naming the first field outside its range (a bad request, not an engine fault).
void validate(const SamplingParams& params);

}  // namespace moe
