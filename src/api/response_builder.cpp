#include "api/response_builder.h"

#include <stdexcept>

namespace moe::api {
namespace {

// Adds a chunk's rows to what a completion holds, starting the rows with its first chunk.
void append_rows(std::optional<RawRows>& rows, const std::optional<msg::EncodedArray>& chunk) {
  if (!chunk) return;
  if (!rows) rows.emplace();
  rows->append(RawRows::from(*chunk));
}

}  // namespace

void CompletionState::append(const msg::TextOutput& output) {
  rid = output.rid;
  index = output.index;
  text += output.text;
  output_ids.insert(output_ids.end(), output.output_ids.begin(), output.output_ids.end());
  output_logprobs.insert(output_logprobs.end(), output.output_logprobs.begin(), output.output_logprobs.end());
  output_token_texts.insert(output_token_texts.end(), output.output_token_texts.begin(),
                            output.output_token_texts.end());
  output_top_logprobs.insert(output_top_logprobs.end(), output.output_top_logprobs.begin(),
                             output.output_top_logprobs.end());
  if (!output.input_token_ids.empty()) {
    input_token_ids = output.input_token_ids;
    input_token_logprobs = output.input_token_logprobs;
    input_token_texts = output.input_token_texts;
    input_top_logprobs = output.input_top_logprobs;
  }
  append_rows(routed_experts, output.routed_experts);
  append_rows(router_weights, output.router_weights);
  append_rows(draft_routed_experts, output.draft_routed_experts);
  if (output.finish_reason) finish_reason = output.finish_reason;
  prompt_tokens = output.prompt_tokens;
  completion_tokens = output.completion_tokens;
  cached_tokens = output.cached_tokens;
  weight_version = output.weight_version;
}

CompletionGrid::CompletionGrid(const GenerationCall& call) {
  for (const msg::GenerateRequest& request : call.requests) {
    grid_.emplace_back(static_cast<size_t>(request.sampling.n));
    unfinished_ += static_cast<size_t>(request.sampling.n);
  }
}

const CompletionState& CompletionGrid::record(size_t prompt, const msg::TextOutput& output) {
  std::vector<CompletionState>& completions = grid_.at(prompt);
  if (output.index < 0 || static_cast<size_t>(output.index) >= completions.size()) {
    throw std::logic_error("output of request " + output.rid + " has index " + std::to_string(output.index) +
                           " outside its " + std::to_string(completions.size()) + " completions");
  }
  CompletionState& completion = completions[static_cast<size_t>(output.index)];
  if (completion.finish_reason) {
    throw std::logic_error("output of request " + output.rid + " after its completion finished");
  }
  completion.append(output);
  if (completion.finish_reason) --unfinished_;
  return completion;
}

std::unique_ptr<ResponseBuilder> make_response_builder(const GenerationCall& call, const std::string& response_id,
                                                       int64_t created) {
  if (call.api == ApiKind::Generate) return make_generate_builder(call);
  return make_openai_builder(call, response_id, created);
}

std::string json_text(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string sse_event(const nlohmann::json& payload) { return "data: " + json_text(payload) + "\n\n"; }

std::string sse_done() { return "data: [DONE]\n\n"; }

}  // namespace moe::api
