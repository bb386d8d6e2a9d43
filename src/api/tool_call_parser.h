#pragma once
// --tool-call-parser qwen25: the tool calls of Qwen2.5/Qwen3 output, blocks of
// "<tool_call>\n{\"name\": ..., \"arguments\": {...}}\n</tool_call>", taken out of the text,
// incrementally.
//
// A block whose inside (whitespace around it aside) is a JSON object with a string `name` and an
// object `arguments` becomes a call; its arguments are re-serialised compactly, keys in the model's
// order. Any other block (malformed JSON, a missing name) stays in the content as it was written, and
// so does a block the output leaves open. Text outside the blocks is content, byte for byte. A block
// is decided when its "</tool_call>" arrives, so a call comes out whole. Feeding the text in any
// pieces gives the same content and calls.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/tag_scanner.h"

namespace moe::api {

struct ToolCall {
  std::string name;
  std::string arguments;  // a JSON object's text
  bool operator==(const ToolCall&) const = default;
};

struct ToolCallSplit {
  std::string content;
  std::vector<ToolCall> calls;
};

class ToolCallParser {
 public:
  // What `text`, the next piece of the output, adds to the content and the calls.
  ToolCallSplit feed(std::string_view text);
  // The output ended: held-back text and an unclosed block, as content.
  ToolCallSplit finish();

 private:
  // The block's inside is complete: a call, or content when it is not one.
  void close_block(ToolCallSplit& out);

  bool in_block_ = false;
  std::string block_;  // the inside of the open block so far
  TagScanner open_{"<tool_call>"};
  TagScanner close_{"</tool_call>"};
};

// The call a block's inside describes, or none.
std::optional<ToolCall> parse_tool_call(std::string_view inside);

}  // namespace moe::api
