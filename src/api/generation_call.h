#pragma once
// A generation call as the HTTP API receives it: SGLang's /generate, OpenAI's /v1/completions and
// /v1/chat/completions, each parsed and validated into engine requests plus how to shape the answer;
// and the ids the server gives requests that bring none.
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "api/chat_output_parser.h"

#include "moe/messages.h"

namespace moe::api {

// Which API a call came through; it decides the shape of the answer.
enum class ApiKind { Generate, Completion, ChatCompletion };

// How OpenAI answers carry routed-expert ids: base64 with `_shape`/`_dtype`, or nested lists (vLLM's).
enum class RoutingFormat { Base64, List };

// One HTTP generation call: one engine request per prompt, each asking for `sampling.n` completions.
// Routing, when asked, is requested raw (EncodedArray.raw) so the answer can split and re-encode it.
struct GenerationCall {
  ApiKind api = ApiKind::Generate;
  std::vector<msg::GenerateRequest> requests;
  bool batched = false;  // /generate got a list of prompts: the answer is a list even for one
  bool stream = false;
  std::string model;                  // OpenAI: the served model's name
  bool include_usage = false;         // OpenAI streaming: a final chunk with `usage`
  RoutingFormat routing_format = RoutingFormat::Base64;
  bool tokens_as_ids = false;     // OpenAI logprobs name tokens "token_id:N" (vLLM's return_tokens_as_token_ids)
  bool text_in_logprobs = false;  // /generate logprob triples carry token texts (SGLang's return_text_in_logprobs)
  bool ids_only = false;          // --skip-tokenizer-init: /generate answers carry output_ids and no text
  // OpenAI completions' echo: each choice's text starts with its prompt (a text prompt), and its
  // logprobs with the prompt tokens' (the requests ask for them from position 0).
  bool echo = false;
  // A streamed /generate sends each chunk's own routing rows ("stream_routed_experts": "delta")
  // instead of the whole request's rows on its final chunk (SGLang's cumulative convention).
  bool stream_routing_delta = false;
  // OpenAI chat: what the answer takes out of the generated text (the server's parsers, as the
  // request's tools and tool_choice allow them).
  struct OutputParsing {
    bool reasoning = false;      // <think> blocks become reasoning_content
    bool tool_calls = false;     // <tool_call> blocks become tool_calls
    // continue_final_message: the last message's text, which the parsers read first (a block it
    // opens and the model closes is parsed whole; nothing of it is answered again).
    std::string continued_text;
  } output_parsing;
};

// Parses a request body; malformed JSON is an ApiError (400) quoting the parser's complaint.
nlohmann::json parse_json_body(std::string_view body);
// The same, keeping the body's key order.
nlohmann::ordered_json parse_ordered_json_body(std::string_view body);

// SGLang's /generate: `text` or `input_ids` (one or a list), `sampling_params` (one or a list),
// `stream` (with `stream_routed_experts`), `return_logprob`, `top_logprobs_num`,
// `return_text_in_logprobs`, `logprob_start_len`, the routed-experts fields, `rid` (one or a list).
GenerationCall parse_generate(const nlohmann::json& body);

// OpenAI's /v1/completions; a `model` other than `served_model` is a 404.
GenerationCall parse_completion(const nlohmann::json& body, const std::string& served_model);

// OpenAI's /v1/chat/completions; a `model` other than `served_model` is a 404. The body is read in
// the client's key order (tools and tool calls reach the template as given); `parsers` are the
// server's, which tool_choice "auto" needs.
GenerationCall parse_chat_completion(const nlohmann::ordered_json& body, const std::string& served_model,
                                     const OutputParsers& parsers = {});

}  // namespace moe::api
