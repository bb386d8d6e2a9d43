#include "api/chat_choice_parser.h"

#include <cstdio>
#include <random>

namespace moe::api {
namespace {

using nlohmann::json;

// "call_" and 24 hex digits from the operating system's random source, as OpenAI's ids look.
std::string new_tool_call_id() {
  thread_local std::random_device random;
  char digits[25];
  std::snprintf(digits, sizeof digits, "%08x%08x%08x", random(), random(), random());
  return std::string("call_") + digits;
}

json text_or_null(const std::string& text) { return text.empty() ? json() : json(text); }

}  // namespace

ChatChoiceParser::ChatChoiceParser(const GenerationCall::OutputParsing& parsing)
    : reasoning_(parsing.reasoning), parser_(parsing.reasoning, parsing.tool_calls, parsing.continued_text) {}

json ChatChoiceParser::calls_json(const std::vector<ToolCall>& calls, bool in_delta) {
  json result = json::array();
  for (const ToolCall& call : calls) {
    json entry = {{"id", new_tool_call_id()},
                  {"type", "function"},
                  {"function", {{"name", call.name}, {"arguments", call.arguments}}}};
    if (in_delta) entry["index"] = calls_;
    ++calls_;
    result.push_back(std::move(entry));
  }
  return result;
}

json ChatChoiceParser::delta(std::string_view text, bool last) {
  ChatOutputDelta piece = parser_.feed(text);
  if (last) piece.append(parser_.finish());
  json delta = {{"content", piece.content}};
  if (!piece.reasoning.empty()) delta["reasoning_content"] = piece.reasoning;
  if (!piece.calls.empty()) delta["tool_calls"] = calls_json(piece.calls, true);
  return delta;
}

json ChatChoiceParser::message(std::string_view text) {
  ChatOutputDelta whole = parser_.feed(text);
  whole.append(parser_.finish());
  json message = {{"role", "assistant"}, {"content", text_or_null(whole.content)}};
  if (reasoning_) message["reasoning_content"] = text_or_null(whole.reasoning);
  if (!whole.calls.empty()) message["tool_calls"] = calls_json(whole.calls, false);
  return message;
}

}  // namespace moe::api
