// evaluate(): the value of an expression in a scope, with the operators and access of value.h.
#include "jinja/scope.h"

#include "jinja/ast.h"
#include "jinja/template.h"

namespace moe::jinja {

namespace {

// Evaluates one node; RenderFailures escape to evaluate(), which adds the line.
class ExpressionVisitor {
 public:
  explicit ExpressionVisitor(const Scope& scope) : scope_(scope) {}

  Value operator()(const ast::Literal& node) const { return node.value; }

  Value operator()(const ast::Name& node) const {
    if (const Value* value = scope_.find(node.name)) return *value;
    if (const Value* global = builtin_globals().find(node.name)) return *global;
    if (is_unsupported_global(node.name)) throw RenderFailure("unsupported global '" + node.name + "'");
    return Value::undefined("'" + node.name + "' is undefined");
  }

  Value operator()(const ast::ListLiteral& node) const {
    std::vector<Value> items;
    for (const ExprPtr& item : node.items) items.push_back(eval(*item));
    return node.is_tuple ? Value::tuple(std::move(items)) : Value::list(std::move(items));
  }

  Value operator()(const ast::DictLiteral& node) const {
    Dict dict;
    for (const auto& [key_expr, value_expr] : node.entries) {
      const Value key = eval(*key_expr);
      if (!key.is_string()) throw RenderFailure("dict keys must be strings here, not " + key.type_name());
      dict.set(key.as_string(), eval(*value_expr));
    }
    return Value::dict(std::move(dict));
  }

  Value operator()(const ast::Attribute& node) const { return get_attribute(eval(*node.object), node.name); }

  Value operator()(const ast::Subscript& node) const { return get_item(eval(*node.object), eval(*node.key)); }

  Value operator()(const ast::Slice& node) const {
    const Value object = eval(*node.object);
    return get_slice(object, optional(node.start), optional(node.stop), optional(node.step));
  }

  Value operator()(const ast::Call& node) const {
    const Value callee = eval(*node.callee);
    require_defined(callee);
    if (callee.kind() != Value::Kind::Callable) throw RenderFailure("'" + callee.type_name() + "' object is not callable");
    return callee.as_callable().invoke(arguments(node.arguments));
  }

  Value operator()(const ast::FilterCall& node) const {
    const Value input = eval(*node.input);
    const CallArgs args = arguments(node.arguments);
    try {
      return node.filter(input, args);
    } catch (const RenderFailure& failure) {
      throw RenderFailure("filter '" + node.name + "': " + failure.what());
    }
  }

  Value operator()(const ast::TestCall& node) const {
    const Value input = eval(*node.input);
    const CallArgs args = arguments(node.arguments);
    try {
      return Value::boolean(node.predicate(input, args) != node.negated);
    } catch (const RenderFailure& failure) {
      throw RenderFailure("test '" + node.name + "': " + failure.what());
    }
  }

  Value operator()(const ast::Unary& node) const {
    const Value operand = eval(*node.operand);
    switch (node.op) {
      case ast::UnaryOperator::Not:
        return Value::boolean(!operand.truthy());
      case ast::UnaryOperator::Negate:
        return negate(operand);
      case ast::UnaryOperator::Plus:
        return unary_plus(operand);
    }
    return Value();
  }

  Value operator()(const ast::Arithmetic& node) const {
    const Value left = eval(*node.left);
    return arithmetic(node.op, left, eval(*node.right));
  }

  Value operator()(const ast::Concat& node) const {
    std::string text;
    for (const ExprPtr& part : node.parts) text += to_str(eval(*part));
    return Value::string(std::move(text));
  }

  Value operator()(const ast::Logical& node) const {
    Value left = eval(*node.left);
    // Python's `and`/`or` yield an operand, not a bool.
    if (left.truthy() != node.is_and) return left;
    return eval(*node.right);
  }

  Value operator()(const ast::Comparison& node) const {
    Value left = eval(*node.first);
    for (const ast::ComparisonLink& link : node.links) {
      Value right = eval(*link.operand);
      const bool holds = link.membership ? contains(right, left) != link.negated_membership
                                         : compare(link.op, left, right);
      if (!holds) return Value::boolean(false);
      left = std::move(right);
    }
    return Value::boolean(true);
  }

  Value operator()(const ast::Conditional& node) const {
    if (eval(*node.condition).truthy()) return eval(*node.then);
    if (node.otherwise) return eval(*node.otherwise);
    return Value::undefined("the inline if-expression evaluated to false and has no else");
  }

 private:
  Value eval(const Expr& expression) const { return evaluate(expression, scope_); }

  Value optional(const ExprPtr& expression) const { return expression ? eval(*expression) : Value::none(); }

  CallArgs arguments(const ArgumentList& list) const {
    CallArgs args;
    for (const ExprPtr& item : list.positional) args.positional.push_back(eval(*item));
    for (const auto& [name, item] : list.keyword) args.keyword.emplace_back(name, eval(*item));
    return args;
  }

  const Scope& scope_;
};

}  // namespace

Value evaluate(const Expr& expression, const Scope& scope) {
  try {
    return std::visit(ExpressionVisitor(scope), expression.node);
  } catch (const RenderFailure& failure) {
    fail_at(expression.line, failure.what());
  }
}

}  // namespace moe::jinja
