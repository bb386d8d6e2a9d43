#pragma once
// Why a request stopped, in the three kinds SGLang reports in meta_info.finish_reason:
// "length" (max_new_tokens or the context was reached), "stop" (with the matched token id or stop
// string) and "abort" (with a message).
#include <cstdint>
#include <string>
#include <variant>

namespace moe {

enum class FinishKind { Length, Stop, Abort };

struct FinishReason {
  FinishKind kind = FinishKind::Length;
  // For Stop: the token id (EOS or stop_token_ids) or the stop string the detokenizer found.
  std::variant<std::monostate, int32_t, std::string> matched;
  std::string message;  // for Abort: why

  static FinishReason length() { return {FinishKind::Length, {}, {}}; }
  static FinishReason stop_token(int32_t token) { return {FinishKind::Stop, token, {}}; }
  static FinishReason stop_string(std::string text) { return {FinishKind::Stop, std::move(text), {}}; }
  static FinishReason abort(std::string why) { return {FinishKind::Abort, {}, std::move(why)}; }
};

}  // namespace moe
