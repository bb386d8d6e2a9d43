#include "api/chat_output_parser.h"

#include "common/error.h"

namespace moe::api {

OutputParsers output_parsers_named(const std::string& tool_call_parser, const std::string& reasoning_parser) {
  if (!tool_call_parser.empty() && tool_call_parser != "qwen25")
    throw Error("--tool-call-parser must be qwen25, got '" + tool_call_parser + "'");
  if (!reasoning_parser.empty() && reasoning_parser != "qwen3")
    throw Error("--reasoning-parser must be qwen3, got '" + reasoning_parser + "'");
  return {.qwen25_tool_calls = !tool_call_parser.empty(), .qwen3_reasoning = !reasoning_parser.empty()};
}

void ChatOutputDelta::append(const ChatOutputDelta& later) {
  reasoning += later.reasoning;
  content += later.content;
  calls.insert(calls.end(), later.calls.begin(), later.calls.end());
}

ChatOutputParser::ChatOutputParser(bool reasoning, bool tool_calls, std::string_view continued) {
  if (reasoning) reasoning_.emplace();
  if (tool_calls) tool_calls_.emplace();
  feed(continued);
}

ChatOutputDelta ChatOutputParser::feed(std::string_view text) {
  return from_split(reasoning_ ? reasoning_->feed(text) : ReasoningSplit{{}, std::string(text)}, false);
}

ChatOutputDelta ChatOutputParser::finish() {
  return from_split(reasoning_ ? reasoning_->finish() : ReasoningSplit{}, true);
}

ChatOutputDelta ChatOutputParser::from_split(ReasoningSplit split, bool last) {
  ChatOutputDelta delta{std::move(split.reasoning), {}, {}};
  if (!tool_calls_) {
    delta.content = std::move(split.content);
    return delta;
  }
  ToolCallSplit calls = tool_calls_->feed(split.content);
  if (last) {
    ToolCallSplit rest = tool_calls_->finish();
    calls.content += rest.content;
  }
  delta.content = std::move(calls.content);
  delta.calls = std::move(calls.calls);
  return delta;
}

}  // namespace moe::api
