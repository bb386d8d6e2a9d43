#pragma once
// Executes a parsed template: statements, loops with Jinja's `loop` object, assignments and
// macros. One Renderer serves one render call.
#include <memory>
#include <string>

#include "tokenizer/jinja/ast.h"
#include "tokenizer/jinja/scope.h"

namespace moe::tokenizer::jinja {

class Renderer {
 public:
  // `variables` are what the template sees as globals (messages, add_generation_prompt, ...).
  explicit Renderer(Dict variables);

  // The text `body` renders to.
  std::string render(const Body& body);

 private:
  // How a statement sequence ended: normally, or at a {% break %} / {% continue %}.
  enum class Flow { Normal, Break, Continue };
  using ScopePtr = std::shared_ptr<Scope>;

  Flow execute(const Body& body, const ScopePtr& scope, std::string& out);
  Flow execute(const Stmt& statement, const ScopePtr& scope, std::string& out);
  Flow execute_for(const ast::For& loop, const ScopePtr& scope, std::string& out);
  void assign(const AssignTarget& target, const Value& value, Scope& scope) const;
  Value make_macro(const ast::Macro& macro, const ScopePtr& scope);
  Value call_macro(const ast::Macro& macro, const ScopePtr& definition_scope, const CallArgs& args);

  std::shared_ptr<const Scope> globals_;
  int macro_depth_ = 0;
};

}  // namespace moe::tokenizer::jinja
