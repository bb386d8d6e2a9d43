#pragma once
// The two HTTP APIs moe-bench drives: SGLang's /generate and OpenAI's /v1/completions. What a
// streamed request's body is, and what each event of the answer says.
#include <cstdint>
#include <string>

#include "serving/bench_transport.h"

namespace moe::bench {

enum class HttpApi { Generate, OpenAiCompletions };

// "generate" or "openai" (the --api flag); anything else is a moe::Error.
HttpApi parse_http_api(const std::string& name);

// The path the API is served at, e.g. "/generate".
std::string api_path(HttpApi api);

// The JSON body of `request`, streamed, greedy, ignore_eos. OpenAI's chunks carry text only, so the
// OpenAI body asks for `logprobs: 0`, whose per-chunk token list tells how many tokens arrived
// (this engine, SGLang, vLLM), and for the final chunk's `usage` (stream_options.include_usage),
// which servers without token lists (llama.cpp's) send.
std::string request_body(HttpApi api, const BenchRequest& request);

// A failed response's one-line description: its status and the error message of its JSON body
// (SGLang and OpenAI both send {"error": {"message": ...}}), or the body's start when it has none.
std::string http_error_message(int status, const std::string& body);

// What one event of a stream says.
struct StreamUpdate {
  int new_tokens = 0;
  std::string error;  // an {"error": ...} event, or an event that cannot be read
};

// Reads the events of one response's stream, in order (the /generate stream counts its tokens
// cumulatively, so the reader keeps the count so far). An OpenAI chunk counts its logprobs token
// list, or else one token if it has text; a final usage.completion_tokens makes up the difference.
class StreamEventReader {
 public:
  explicit StreamEventReader(HttpApi api) : api_(api) {}

  StreamUpdate read(const std::string& data);

  // The `[DONE]` event that ends every complete stream was read.
  bool done() const { return done_; }

 private:
  HttpApi api_;
  int64_t tokens_so_far_ = 0;
  bool done_ = false;
};

}  // namespace moe::bench
