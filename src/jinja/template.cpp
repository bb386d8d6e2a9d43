// Parsing and rendering a template: the Renderer executes statements, loops with Jinja's `loop`
// object, assignments and macros; expressions go to the evaluator.
#include "jinja/template.h"

#include <algorithm>
#include <optional>

#include "common/error.h"
#include "jinja/ast.h"
#include "jinja/parser.h"
#include "jinja/scope.h"

namespace moe::jinja {

namespace {

// Recursive macros deeper than this are a runaway template, not a chat prompt.
constexpr int kMaxMacroDepth = 100;

// Counts one level of macro nesting for as long as it lives.
struct DepthGuard {
  explicit DepthGuard(int& depth) : depth_(++depth) {}
  ~DepthGuard() { --depth_; }
  int& depth_;
};

template <typename... Handlers>
struct Overloaded : Handlers... {
  using Handlers::operator()...;
};
// Spelled out for clang before 17, which does not deduce an aggregate's template arguments.
template <typename... Handlers>
Overloaded(Handlers...) -> Overloaded<Handlers...>;

// Jinja's `loop` object for iteration `index` of `items`.
Value loop_object(const std::vector<Value>& items, size_t index) {
  const auto n = static_cast<int64_t>(items.size());
  const auto i = static_cast<int64_t>(index);
  Dict loop;
  loop.set("index", Value::integer(i + 1));
  loop.set("index0", Value::integer(i));
  loop.set("revindex", Value::integer(n - i));
  loop.set("revindex0", Value::integer(n - i - 1));
  loop.set("first", Value::boolean(i == 0));
  loop.set("last", Value::boolean(i == n - 1));
  loop.set("length", Value::integer(n));
  loop.set("depth", Value::integer(1));
  loop.set("depth0", Value::integer(0));
  if (index > 0) loop.set("previtem", items[index - 1]);
  if (index + 1 < items.size()) loop.set("nextitem", items[index + 1]);
  loop.set("cycle", Value::callable("cycle", [index](const CallArgs& args) {
             if (args.positional.empty() || !args.keyword.empty())
               throw RenderFailure("loop.cycle() needs at least one positional argument");
             return args.positional[index % args.positional.size()];
           }));
  return Value::dict(std::move(loop));
}

// Executes a parsed template. One Renderer serves one render call.
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

Renderer::Renderer(Dict variables) : globals_(std::make_shared<Scope>(nullptr, std::move(variables))) {}

std::string Renderer::render(const Body& body) {
  std::string out;
  execute(body, std::make_shared<Scope>(globals_), out);
  return out;
}

Renderer::Flow Renderer::execute(const Body& body, const ScopePtr& scope, std::string& out) {
  for (const Stmt& statement : body) {
    const Flow flow = execute(statement, scope, out);
    if (flow != Flow::Normal) return flow;
  }
  return Flow::Normal;
}

Renderer::Flow Renderer::execute(const Stmt& statement, const ScopePtr& scope, std::string& out) {
  try {
    return std::visit(
        Overloaded{
            [&](const ast::Text& node) {
              out += node.text;
              return Flow::Normal;
            },
            [&](const ast::Output& node) {
              out += to_str(evaluate(*node.expression, *scope));
              return Flow::Normal;
            },
            [&](const ast::If& node) {
              for (const ast::IfBranch& branch : node.branches)
                if (evaluate(*branch.condition, *scope).truthy()) return execute(branch.body, scope, out);
              return execute(node.otherwise, scope, out);
            },
            [&](const ast::For& node) { return execute_for(node, scope, out); },
            [&](const ast::Set& node) {
              assign(node.target, evaluate(*node.value, *scope), *scope);
              return Flow::Normal;
            },
            [&](const ast::SetBlock& node) {
              std::string captured;
              const Flow flow = execute(node.body, scope, captured);
              scope->set(node.name, Value::string(std::move(captured)));
              return flow;
            },
            [&](const ast::Macro& node) {
              scope->set(node.name, make_macro(node, scope));
              return Flow::Normal;
            },
            [&](const ast::LoopControl& node) { return node.is_break ? Flow::Break : Flow::Continue; },
        },
        statement.node);
  } catch (const RenderFailure& failure) {
    fail_at(statement.line, failure.what());
  }
}

Renderer::Flow Renderer::execute_for(const ast::For& loop, const ScopePtr& scope, std::string& out) {
  std::vector<Value> items = iterate(evaluate(*loop.iterable, *scope));
  if (loop.filter) {
    // `for x in xs if cond`: loop.index and loop.length count only the items kept.
    std::vector<Value> kept;
    for (Value& item : items) {
      Scope candidate(scope);
      assign(loop.target, item, candidate);
      if (evaluate(*loop.filter, candidate).truthy()) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  if (items.empty()) return execute(loop.otherwise, std::make_shared<Scope>(scope), out);
  for (size_t i = 0; i < items.size(); ++i) {
    // A fresh scope per iteration: a `set` in one iteration is gone in the next, as in Jinja.
    auto iteration = std::make_shared<Scope>(scope);
    iteration->set("loop", loop_object(items, i));
    assign(loop.target, items[i], *iteration);
    if (execute(loop.body, iteration, out) == Flow::Break) break;
  }
  return Flow::Normal;
}

void Renderer::assign(const AssignTarget& target, const Value& value, Scope& scope) const {
  if (!target.namespace_attribute.empty()) {
    const Value* object = scope.find(target.names.front());
    if (!object || object->kind() != Value::Kind::Namespace)
      throw RenderFailure("cannot assign attribute on non-namespace object '" + target.names.front() + "'");
    object->as_namespace().attributes.set(target.namespace_attribute, value);
    return;
  }
  if (!target.unpack) {
    scope.set(target.names.front(), value);
    return;
  }
  const std::vector<Value> parts = iterate(value);
  if (parts.size() != target.names.size())
    throw RenderFailure(std::string(parts.size() > target.names.size() ? "too many" : "not enough") +
                        " values to unpack (expected " + std::to_string(target.names.size()) + ", got " +
                        std::to_string(parts.size()) + ")");
  for (size_t i = 0; i < parts.size(); ++i) scope.set(target.names[i], parts[i]);
}

Value Renderer::make_macro(const ast::Macro& macro, const ScopePtr& scope) {
  // The defining scope holds the macro, so the macro holds it weakly: a strong reference would be a cycle.
  std::weak_ptr<Scope> weak_scope = scope;
  return Value::callable(macro.name, [this, &macro, weak_scope](const CallArgs& args) {
    const ScopePtr definition_scope = weak_scope.lock();
    if (!definition_scope) throw RenderFailure("macro '" + macro.name + "' called after its defining block ended");
    return call_macro(macro, definition_scope, args);
  });
}

Value Renderer::call_macro(const ast::Macro& macro, const ScopePtr& definition_scope, const CallArgs& args) {
  const size_t count = macro.parameters.size();
  if (args.positional.size() > count)
    throw RenderFailure("macro '" + macro.name + "' takes not more than " + std::to_string(count) + " argument(s)");
  std::vector<std::optional<Value>> bound(count);
  for (size_t i = 0; i < args.positional.size(); ++i) bound[i] = args.positional[i];
  for (const auto& [name, value] : args.keyword) {
    const auto it = std::find(macro.parameters.begin(), macro.parameters.end(), name);
    if (it == macro.parameters.end())
      throw RenderFailure("macro '" + macro.name + "' takes no keyword argument '" + name + "'");
    auto& slot = bound[static_cast<size_t>(it - macro.parameters.begin())];
    if (slot) throw RenderFailure("macro '" + macro.name + "' got multiple values for argument '" + name + "'");
    slot = value;
  }
  auto call_scope = std::make_shared<Scope>(definition_scope);
  const size_t first_default = count - macro.defaults.size();
  for (size_t i = 0; i < count; ++i) {
    // Defaults are evaluated at call time and may refer to earlier parameters.
    Value value = bound[i]                ? *bound[i]
                  : i >= first_default    ? evaluate(*macro.defaults[i - first_default], *call_scope)
                                          : Value::undefined("parameter '" + macro.parameters[i] + "' was not provided");
    call_scope->set(macro.parameters[i], std::move(value));
  }
  if (macro_depth_ >= kMaxMacroDepth) throw RenderFailure("macro '" + macro.name + "' recursed too deeply");
  const DepthGuard guard(macro_depth_);
  std::string out;
  execute(macro.body, call_scope, out);
  return Value::string(std::move(out));
}

}  // namespace

void fail_at(int line, const std::string& message) {
  throw moe::Error("chat template line " + std::to_string(line) + ": " + message);
}

Template Template::compile(std::string_view source) {
  return Template(std::make_shared<const Body>(parse_template(source)));
}

std::string Template::render(const Dict& variables) const { return Renderer(variables).render(*body_); }

}  // namespace moe::jinja
