#pragma once
// Turns the engine's outputs of one generation call into the answer of the API it came through:
// one JSON body, or (streaming) the payloads of the SSE events, and their framing. The server stays
// API-agnostic.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/generation_call.h"
#include "api/raw_rows.h"
#include "moe/messages.h"

namespace moe::api {

// What the engine has produced so far for each completion of a generation call: the engine streams
// TextOutputs holding only what is new since the previous one, and answers need the whole.

// One completion (one prompt, one of its n samples): every record of it joined, under the record's
// field names (prompt logprobs from the output that brought them).
struct CompletionState : msg::SequenceOutput {
  std::string text;
  std::vector<std::string> output_token_texts;  // each output token decoded alone, with logprobs
  std::vector<std::string> input_token_texts;
  int32_t completion_tokens = 0;
  std::optional<RawRows> routed_experts;
  std::optional<RawRows> router_weights;
  std::optional<RawRows> draft_routed_experts;  // the STANDALONE draft's rows of the same positions

  // Adds an output's new text, ids, logprobs and rows; its counts replace the previous ones.
  void append(const msg::TextOutput& output);
};

// The completions of one call, by prompt and sample index.
class CompletionGrid {
 public:
  // One row per request of `call`, of that request's `sampling.n` completions.
  explicit CompletionGrid(const GenerationCall& call);

  // Adds an output of prompt `prompt` to its completion and returns that completion. An index
  // outside 0..n-1, or an output after the completion finished, is an engine fault (std::logic_error).
  const CompletionState& record(size_t prompt, const msg::TextOutput& output);

  // Every completion has its finish reason.
  bool finished() const { return unfinished_ == 0; }
  size_t num_prompts() const { return grid_.size(); }
  const std::vector<CompletionState>& completions(size_t prompt) const { return grid_.at(prompt); }

 private:
  std::vector<std::vector<CompletionState>> grid_;
  size_t unfinished_ = 0;
};

class ResponseBuilder {
 public:
  explicit ResponseBuilder(const GenerationCall& call) : grid_(call), stream_(call.stream) {}
  virtual ~ResponseBuilder() = default;

  // Records an output of prompt `prompt` (an index into call.requests); when streaming, returns
  // the payloads of the events it produces, in order.
  virtual std::vector<nlohmann::json> add(size_t prompt, const msg::TextOutput& output) = 0;
  // Streaming: payloads to send after the last output and before [DONE] (OpenAI's usage chunk).
  virtual std::vector<nlohmann::json> closing_payloads() const { return {}; }
  // The whole answer of a call that does not stream, once finished().
  virtual nlohmann::json response() const = 0;

  // Every completion of every prompt has finished.
  bool finished() const { return grid_.finished(); }

 protected:
  CompletionGrid grid_;
  bool stream_;
};

// The builder for `call`'s API. `response_id` names OpenAI answers ("cmpl-<id>", "chatcmpl-<id>"),
// `created` is their Unix time.
std::unique_ptr<ResponseBuilder> make_response_builder(const GenerationCall& call, const std::string& response_id,
                                                       int64_t created);

// SGLang's /generate answer (generate_response.cpp): {"text", "output_ids", "meta_info": {...}} per
// completion, a list of them for a batch or n > 1. Streaming follows SGLang's default
// (non-incremental) output: each event repeats the text, ids and logprobs so far, and the final event
// carries the whole request's routing rows (those of the unstreamed answer); with
// "stream_routed_experts": "delta" each event carries the rows of the tokens it covers instead, so
// that the rows of all events concatenated equal those of the unstreamed answer.

// SGLang's finish_reason: {"type": "stop", "matched": id or text} | {"type": "length", "length": n}
// | {"type": "abort", "message": why}; null while unfinished.
nlohmann::json sglang_finish_reason(const std::optional<msg::FinishReason>& reason, int32_t completion_tokens);

std::unique_ptr<ResponseBuilder> make_generate_builder(const GenerationCall& call);

// OpenAI's completion and chat completion answers (openai_response.cpp): objects, streamed chunks
// and the usage chunk, with vLLM's routing split: `prompt_routed_experts` once per prompt (response
// level; a list aligned with the prompts when several were sent) and `routed_experts` per choice,
// holding only that completion's own rows. Each completion's engine rows start at position 0, so
// its first prompt_tokens rows are the prompt's. Choice i of prompt p has index p * n + i. Logprobs
// name tokens by their text decoded alone with its UTF-8 bytes, as vLLM, or as "token_id:<id>" with
// return_tokens_as_token_ids; top_logprobs follow the same form. The weight version that computed the tokens is SGLang's extra field
// `metadata.weight_version`, on the response and on every streamed chunk.

// The response model list of GET /v1/models; max_model_len is vLLM's: the longest prompt + output.
nlohmann::json model_list(const std::string& model, int64_t created, int64_t max_model_len);

std::unique_ptr<ResponseBuilder> make_openai_builder(const GenerationCall& call, const std::string& response_id,
                                                     int64_t created);

// Server-sent events as SGLang and OpenAI stream them: `data: {json}\n\n` per event, then
// `data: [DONE]\n\n`; and the one way JSON bodies are written.

// `value` as compact JSON; invalid UTF-8 (never expected from the detokenizer) becomes U+FFFD
// instead of failing the whole response.
std::string json_text(const nlohmann::json& value);

// One event carrying `payload`.
std::string sse_event(const nlohmann::json& payload);

// The event that ends every stream.
std::string sse_done();

}  // namespace moe::api
