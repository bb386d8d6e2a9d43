#include "frontend/request_checks.h"

#include <string>

#include "capture/routing_encoding.h"
#include "common/error.h"
#include "sampling/sampler.h"

namespace moe {
namespace {

// Every stop string and stop token is checked against every generated token of the request, so
// their number is what one request can make the detokenizer and sampler spend per token.
constexpr size_t kMaxStopStrings = 64;
constexpr size_t kMaxStopStringBytes = 1024;
constexpr size_t kMaxStopTokenIds = 1024;

[[noreturn]] void refuse(const std::string& field, const std::string& problem) {
  throw FieldError::about(field, problem);
}

// The sampler's own range check (sampling/sampler.cpp) of one field alone, which tells which field
// to name in the refusal.
void check_draw_field(const std::string& field, const msg::DrawSettings& only_this_field) {
  try {
    validate(only_this_field);
  } catch (const Error& e) {
    throw FieldError(field, "`" + field + "`: " + e.what());
  }
}

void require_at_least(const std::string& field, int64_t value, int64_t minimum) {
  if (value < minimum) refuse(field, "must be at least " + std::to_string(minimum) + ", got " + std::to_string(value));
}

void check_sampling(const msg::SamplingParams& s, const msg::RequestFieldNames& names, const RequestLimits& limits) {
  const std::string& in = names.sampling;
  check_draw_field(in + "temperature", {.temperature = s.temperature});
  check_draw_field(in + "top_p", {.top_p = s.top_p});
  check_draw_field(in + "top_k", {.top_k = s.top_k});
  check_draw_field(in + "min_p", {.min_p = s.min_p});
  check_draw_field(in + "presence_penalty", {.presence_penalty = s.presence_penalty});
  check_draw_field(in + "frequency_penalty", {.frequency_penalty = s.frequency_penalty});
  check_draw_field(in + "repetition_penalty", {.repetition_penalty = s.repetition_penalty});
  check_draw_field(in + "logit_bias", {.logit_bias = s.logit_bias});
  for (const msg::TokenBias& bias : s.logit_bias)
    if (bias.id < 0 || bias.id >= limits.vocab_size)
      refuse(in + "logit_bias", "has token id " + std::to_string(bias.id) + ", outside the vocabulary [0, " +
                                    std::to_string(limits.vocab_size) + ")");
  require_at_least(names.max_new_tokens.empty() ? in + "max_new_tokens" : names.max_new_tokens, s.max_new_tokens, 1);
  require_at_least(names.min_new_tokens, s.min_new_tokens, 0);
  require_at_least(in + "n", s.n, 1);
  if (s.n > limits.max_n)
    refuse(in + "n", "is " + std::to_string(s.n) + "; this server runs at most " + std::to_string(limits.max_n) +
                         " completions at once (--max-running-requests)");
  if (s.stop.size() > kMaxStopStrings)
    refuse(in + "stop", "has " + std::to_string(s.stop.size()) + " strings; at most " +
                            std::to_string(kMaxStopStrings) + " are allowed");
  for (const std::string& stop : s.stop)
    if (stop.size() > kMaxStopStringBytes)
      refuse(in + "stop", "has a stop string of " + std::to_string(stop.size()) + " bytes; at most " +
                              std::to_string(kMaxStopStringBytes) + " are allowed");
  if (s.stop_token_ids.size() > kMaxStopTokenIds)
    refuse(in + "stop_token_ids", "has " + std::to_string(s.stop_token_ids.size()) + " ids; at most " +
                                      std::to_string(kMaxStopTokenIds) + " are allowed");
  if (!s.stop.empty() && limits.skip_tokenizer)
    refuse(in + "stop", "needs a tokenizer: this server runs with --skip-tokenizer-init (give stop_token_ids)");
}

void check_logprobs(const msg::GenerateRequest& request, const msg::RequestFieldNames& names) {
  if (request.top_logprobs_num < 0 || request.top_logprobs_num > kMaxTopLogprobs)
    refuse(names.top_logprobs, "must be in [0, " + std::to_string(kMaxTopLogprobs) + "], got " +
                                   std::to_string(request.top_logprobs_num));
  if (request.logprob_start_len < -1)
    refuse(names.logprob_start_len, "must be -1 (no prompt logprobs) or a prompt position >= 0, got " +
                                        std::to_string(request.logprob_start_len));
}

void check_routing(const msg::RoutingOptions& routing, const RequestLimits& limits) {
  require_at_least("routed_experts_start_len", routing.start_len, 0);
  if (routing.return_routed_experts && !limits.routed_experts)
    refuse("return_routed_experts", "needs a server started with --enable-return-routed-experts");
  if (routing.return_draft_routed_experts && !routing.return_routed_experts)
    refuse("return_draft_routed_experts",
           "needs return_routed_experts: the draft's rows are those of the same positions");
  if (routing.return_draft_routed_experts && limits.draft_num_experts == 0)
    refuse("return_draft_routed_experts",
           "needs a server started with --enable-return-routed-experts and --speculative-algorithm NEXTN, or "
           "STANDALONE with an MoE --speculative-draft-model-path");
  if (routing.return_router_weights && !limits.router_weights)
    refuse("return_router_weights", "needs a server started with --enable-return-router-weights");
  if (!routing.return_routed_experts) return;
  // The detokenizer packs the rows in this dtype after the request ran: refused here, before it does.
  const auto check_dtype = [&routing](int32_t num_experts, const std::string& whose) {
    try {
      resolve_routed_experts_dtype(routing.dtype, num_experts);
    } catch (const Error& e) {
      throw FieldError::about("routed_experts_dtype", e.what() + whose);
    }
  };
  check_dtype(limits.num_experts, "");
  if (routing.return_draft_routed_experts)
    check_dtype(limits.draft_num_experts, " (the draft's, for return_draft_routed_experts)");
}

}  // namespace

void check_request_values(const msg::GenerateRequest& request, const RequestLimits& limits) {
  check_sampling(request.sampling, request.field_names, limits);
  check_logprobs(request, request.field_names);
  check_routing(request.routing, limits);
}

}  // namespace moe
