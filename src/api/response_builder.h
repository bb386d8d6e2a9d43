#pragma once
// Turns the engine's outputs of one generation call into the answer of the API it came through:
// one JSON body, or (streaming) the payloads of the SSE events. The server stays API-agnostic.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/completion_state.h"
#include "api/generation_call.h"
#include "moe/messages.h"

namespace moe::api {

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

}  // namespace moe::api
