#pragma once
// One chat choice's output parsing in OpenAI's shapes: the assistant message of a whole output,
// or the delta fields of each streamed piece (reasoning_content, content, tool_calls with their
// ids and indices).
#include <cstddef>
#include <string_view>

#include <nlohmann/json.hpp>

#include "api/chat_output_parser.h"
#include "api/generation_call.h"

namespace moe::api {

class ChatChoiceParser {
 public:
  explicit ChatChoiceParser(const GenerationCall::OutputParsing& parsing);

  // A streamed chunk's delta for the next piece `text`; `last`: the output ended with it.
  // `content` is always there; reasoning_content and tool_calls when the piece has some.
  nlohmann::json delta(std::string_view text, bool last);
  // The assistant message of the whole output `text`: content (null when empty), reasoning_content
  // (with the reasoning parser; null when empty) and tool_calls (when there are calls).
  nlohmann::json message(std::string_view text);
  // Some tool call was answered: the choice's finish_reason is "tool_calls".
  bool called_tools() const { return calls_ > 0; }

 private:
  // The calls' JSON; in a delta each carries its index among the choice's calls.
  nlohmann::json calls_json(const std::vector<ToolCall>& calls, bool in_delta);

  bool reasoning_;
  ChatOutputParser parser_;
  size_t calls_ = 0;
};

}  // namespace moe::api
