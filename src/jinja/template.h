#pragma once
// A compiled Jinja template: parse once, render many times (concurrently if need be).
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "jinja/value.h"

namespace moe::jinja {

struct Stmt;

// Throws moe::Error("chat template line N: <message>"): how every template problem is reported,
// at parse time and at render time.
[[noreturn]] void fail_at(int line, const std::string& message);

class Template {
 public:
  // Parses `source`. Throws moe::Error naming the line for a syntax error or an unsupported tag,
  // filter or test.
  static Template compile(std::string_view source);

  // Renders with `variables` as the template's globals. Throws moe::Error naming the line when the
  // template fails (a type error, an unsupported method) or calls raise_exception (whose message
  // is passed through unchanged).
  std::string render(const Dict& variables) const;

 private:
  explicit Template(std::shared_ptr<const std::vector<Stmt>> body) : body_(std::move(body)) {}

  std::shared_ptr<const std::vector<Stmt>> body_;
};

}  // namespace moe::jinja
