#include "api/reasoning_parser.h"

#include <utility>

namespace moe::api {
namespace {
constexpr std::string_view kThinkStart = "<think>";
}  // namespace

ReasoningSplit ThinkBlockParser::feed(std::string_view text) {
  ReasoningSplit out;
  std::string rest(text);
  if (phase_ == Phase::Opening) {
    opening_ += text;
    if (opening_.starts_with(kThinkStart)) {
      phase_ = Phase::Thinking;
      rest = opening_.substr(kThinkStart.size());
      opening_.clear();
    } else if (kThinkStart.starts_with(opening_)) {
      return out;
    } else {
      phase_ = Phase::Answering;
      out.content = std::exchange(opening_, {});
      return out;
    }
  }
  if (phase_ == Phase::Thinking) {
    TagSplit split = end_.feed(rest);
    out.reasoning = std::move(split.before);
    if (split.after) {
      phase_ = Phase::Answering;
      out.content = std::move(*split.after);
    }
    return out;
  }
  out.content = std::move(rest);
  return out;
}

ReasoningSplit ThinkBlockParser::finish() {
  if (phase_ == Phase::Opening) return {{}, std::exchange(opening_, {})};
  if (phase_ == Phase::Thinking) return {end_.release(), {}};
  return {};
}

}  // namespace moe::api
