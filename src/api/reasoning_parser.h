#pragma once
// --reasoning-parser qwen3: Qwen3's thinking output, "<think>reasoning</think>answer", split into
// the reasoning and the answer (OpenAI-style `reasoning_content` and `content`), incrementally.
//
// The output thinks when it begins with "<think>": what follows, up to "</think>", is reasoning
// (all the rest of the output when "</think>" never comes, as when max_tokens cuts it short); the
// text after "</think>" is content, byte for byte (Qwen3 writes "\n\n" there; nothing is trimmed).
// An output that does not begin with "<think>" (enable_thinking false puts the empty think block in
// the prompt) is all content. Feeding the text in any pieces gives the same concatenated result.
#include <string>
#include <string_view>

#include "api/tag_scanner.h"

namespace moe::api {

struct ReasoningSplit {
  std::string reasoning;
  std::string content;
};

class ThinkBlockParser {
 public:
  // What `text`, the next piece of the output, adds to the reasoning and the content; text that may
  // still be part of a tag is held back.
  ReasoningSplit feed(std::string_view text);
  // The output ended: what was held back.
  ReasoningSplit finish();

 private:
  enum class Phase { Opening, Thinking, Answering };
  Phase phase_ = Phase::Opening;
  std::string opening_;  // the output so far while it may still begin "<think>"
  TagScanner end_{"</think>"};
};

}  // namespace moe::api
