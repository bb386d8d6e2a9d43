#pragma once
// The checks of a request's values that need no prompt: sampling ranges, stops, logprobs, and the
// routing it asks for against what the server captures. They are made here once, for every
// transport (HTTP, ZeroMQ, the embedded engine); a transport's parser checks only the types it reads.
// Each refusal is a moe::FieldError naming the field as the client sent it (GenerateRequest::field_names).
#include <cstdint>

#include "moe/messages.h"

namespace moe {

// What the engine behind the front door can take.
struct RequestLimits {
  int64_t vocab_size = 0;
  int64_t context_length = 0;    // the model's context; 0 = no limit of its own
  int64_t max_sequence_len = 0;  // prompt + output positions the context and the KV pool leave
  bool routed_experts = false;   // --enable-return-routed-experts
  bool router_weights = false;   // --enable-return-router-weights
  // The most completions one request may ask for (n): more than can run at once would only queue
  // behind themselves and hold every other client back.
  int32_t max_n = 256;
  // The STANDALONE draft's experts when capture is on and the draft is an MoE (then
  // return_draft_routed_experts can be served); 0 = it cannot.
  int32_t draft_num_experts = 0;
  int32_t num_experts{};  // the model's: what routed_experts_dtype must hold
  // The layer axis of rows a request does not choose (--routed-experts-layers).
  msg::RoutedExpertsLayers routed_experts_layers = msg::RoutedExpertsLayers::All;
  // --skip-tokenizer-init: no tokenizer was loaded, so prompts are token ids and replies carry no text.
  bool skip_tokenizer = false;
};

// Throws a moe::FieldError for the first value of `request` out of range for `limits`.
void check_request_values(const msg::GenerateRequest& request, const RequestLimits& limits);

}  // namespace moe
