#include "api/tool_call_parser.h"

#include <utility>

#include <nlohmann/json.hpp>

#include "common/bounded_json.h"

namespace moe::api {
namespace {
constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = "</tool_call>";
}  // namespace

std::optional<ToolCall> parse_tool_call(std::string_view inside) {
  // ordered_json keeps the arguments' keys in the model's order.
  nlohmann::ordered_json call;
  try {
    call = parse_bounded_json<nlohmann::ordered_json>(inside, "", /*allow_exceptions=*/false);
  } catch (const JsonOverLimit&) {
    return std::nullopt;  // kept as text, like any other block that is not a call
  }
  if (!call.is_object()) return std::nullopt;
  const auto name = call.find("name");
  const auto arguments = call.find("arguments");
  if (name == call.end() || !name->is_string() || name->get_ref<const std::string&>().empty()) return std::nullopt;
  if (arguments == call.end() || !arguments->is_object()) return std::nullopt;
  return ToolCall{name->get<std::string>(), arguments->dump()};
}

ToolCallSplit ToolCallParser::feed(std::string_view text) {
  ToolCallSplit out;
  std::string rest(text);
  while (true) {
    if (!in_block_) {
      TagSplit split = open_.feed(rest);
      out.content += split.before;
      if (!split.after) return out;
      in_block_ = true;
      rest = std::move(*split.after);
    } else {
      TagSplit split = close_.feed(rest);
      block_ += split.before;
      if (!split.after) return out;
      close_block(out);
      rest = std::move(*split.after);
    }
  }
}

void ToolCallParser::close_block(ToolCallSplit& out) {
  in_block_ = false;
  if (std::optional<ToolCall> call = parse_tool_call(block_)) {
    out.calls.push_back(std::move(*call));
  } else {
    out.content += std::string(kOpen) + block_ + std::string(kClose);
  }
  block_.clear();
}

ToolCallSplit ToolCallParser::finish() {
  ToolCallSplit out;
  if (in_block_) {
    out.content = std::string(kOpen) + std::exchange(block_, {}) + close_.release();
    in_block_ = false;
  } else {
    out.content = open_.release();
  }
  return out;
}

}  // namespace moe::api
