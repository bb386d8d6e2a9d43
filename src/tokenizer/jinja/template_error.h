#pragma once
// How every template problem is reported: a moe::Error whose message starts with the line.
#include <string>

namespace moe::tokenizer::jinja {

// Throws moe::Error("chat template line N: <message>").
[[noreturn]] void fail_at(int line, const std::string& message);

}  // namespace moe::tokenizer::jinja
