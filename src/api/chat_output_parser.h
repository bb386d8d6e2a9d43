#pragma once
// What a chat completion's generated text holds besides the answer: Qwen3's reasoning
// (--reasoning-parser qwen3) and Qwen's tool calls (--tool-call-parser qwen25), taken out of the
// text as it streams. The reasoning is split off first; tool calls are looked for in the rest.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/reasoning_parser.h"
#include "api/tool_call_parser.h"

namespace moe::api {

// The parsers a server was started with (moe-serve's --tool-call-parser, --reasoning-parser).
struct OutputParsers {
  bool qwen25_tool_calls = false;
  bool qwen3_reasoning = false;
};

// The flags' values: "" (none) or a parser's name; any other name is a moe::Error naming the flag
// and the known names.
OutputParsers output_parsers_named(const std::string& tool_call_parser, const std::string& reasoning_parser);

// What one piece of the output adds.
struct ChatOutputDelta {
  std::string reasoning;
  std::string content;
  std::vector<ToolCall> calls;
  // What `later` adds after this.
  void append(const ChatOutputDelta& later);
};

// One completion's parser.
class ChatOutputParser {
 public:
  // `continued`: text the output continues (continue_final_message's last message), read first and
  // answered never: a think or tool-call block it opens goes on in the output.
  ChatOutputParser(bool reasoning, bool tool_calls, std::string_view continued = {});

  ChatOutputDelta feed(std::string_view text);
  // The output ended: what was held back.
  ChatOutputDelta finish();

 private:
  // Routes the reasoning split's content through the tool-call parser.
  ChatOutputDelta from_split(ReasoningSplit split, bool last);

  std::optional<ThinkBlockParser> reasoning_;
  std::optional<ToolCallParser> tool_calls_;
};

}  // namespace moe::api
