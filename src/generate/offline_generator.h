#pragma once
// Offline generation over a loaded model: every request advances together, one batch per step,
// prompts fed in chunks, greedy or sampled decoding, routed experts recorded per position.
// This is what `moe-cli generate`, the golden tests and the kernel benchmarks drive; the server
// uses the scheduler (src/scheduler/) instead.
#include <cstdint>
#include <vector>

#include "model/model.h"
#include "sampling/sampler.h"

namespace moe {

struct GenerationRequest {
  std::vector<int32_t> prompt_ids;
  int max_new_tokens = 16;
  SamplingParams sampling;
  std::vector<int32_t> stop_token_ids;  // finish after emitting one of these
};

struct GenerationResult {
  std::vector<int32_t> output_ids;
  std::vector<float> output_logprobs;
  // [rows][num_moe_layers][top_k]: row i = routing of the token at position i when it was input.
  std::vector<int32_t> routed_experts;
  std::vector<float> routed_weights;
  int64_t routed_rows = 0;
};

struct GeneratorOptions {
  int prefill_chunk_size = 0;     // tokens of a prompt per step; 0 = the whole prompt at once
  bool record_routing = true;
  bool include_last = false;      // also feed the last generated token to record its routing
};

std::vector<GenerationResult> generate(Model& model, const std::vector<GenerationRequest>& requests,
                                       const GeneratorOptions& options = {});

}  // namespace moe
