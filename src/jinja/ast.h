#pragma once
// The syntax tree of a parsed template: expressions and statements, each with the template line
// it came from so render errors can name it. Filters and tests are resolved at parse time.
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "jinja/scope.h"
#include "jinja/value.h"

namespace moe::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

// The arguments written in a call, filter or test: `(a, b, key=c)`.
struct ArgumentList {
  std::vector<ExprPtr> positional;
  std::vector<std::pair<std::string, ExprPtr>> keyword;
};

namespace ast {

struct Literal {
  Value value;
};
struct Name {
  std::string name;
};
struct ListLiteral {
  std::vector<ExprPtr> items;
  bool is_tuple = false;
};
struct DictLiteral {
  std::vector<std::pair<ExprPtr, ExprPtr>> entries;
};
// object.name
struct Attribute {
  ExprPtr object;
  std::string name;
};
// object[key]
struct Subscript {
  ExprPtr object, key;
};
// object[start:stop:step]; omitted bounds are null.
struct Slice {
  ExprPtr object, start, stop, step;
};
struct Call {
  ExprPtr callee;
  ArgumentList arguments;
};
// input | name(arguments)
struct FilterCall {
  ExprPtr input;
  std::string name;
  Filter filter;
  ArgumentList arguments;
};
// input is [not] name(arguments)
struct TestCall {
  ExprPtr input;
  std::string name;
  Predicate predicate;
  ArgumentList arguments;
  bool negated = false;
};
enum class UnaryOperator { Not, Negate, Plus };
struct Unary {
  UnaryOperator op;
  ExprPtr operand;
};
struct Arithmetic {
  ArithmeticOperator op;
  ExprPtr left, right;
};
// a ~ b ~ c: the str() of each part, joined.
struct Concat {
  std::vector<ExprPtr> parts;
};
// a and b / a or b: Python's short-circuit, yielding an operand.
struct Logical {
  bool is_and;
  ExprPtr left, right;
};
// A comparison link: one of the comparison operators, or membership (`in`, `not in`).
struct ComparisonLink {
  CompareOperator op = CompareOperator::Equal;
  bool membership = false;
  bool negated_membership = false;
  ExprPtr operand;
};
// first op1 a op2 b ...: Python's chained comparison.
struct Comparison {
  ExprPtr first;
  std::vector<ComparisonLink> links;
};
// then if condition else otherwise; a missing else gives Undefined.
struct Conditional {
  ExprPtr condition, then, otherwise;
};

}  // namespace ast

// One expression node.
struct Expr {
  using Node = std::variant<ast::Literal, ast::Name, ast::ListLiteral, ast::DictLiteral, ast::Attribute,
                            ast::Subscript, ast::Slice, ast::Call, ast::FilterCall, ast::TestCall, ast::Unary,
                            ast::Arithmetic, ast::Concat, ast::Logical, ast::Comparison, ast::Conditional>;
  int line;
  Node node;
};

struct Stmt;
// A sequence of statements: a template, or the inside of a block tag.
using Body = std::vector<Stmt>;

// What `set` and `for` assign to: a name, several names (unpacking), or `namespace.attribute`.
struct AssignTarget {
  std::vector<std::string> names;
  bool unpack = false;
  std::string namespace_attribute;  // non-empty for `set ns.attr = ...` (names[0] is the namespace)
};

namespace ast {

// Literal template text.
struct Text {
  std::string text;
};
// {{ expression }}
struct Output {
  ExprPtr expression;
};
struct IfBranch {
  ExprPtr condition;
  Body body;
};
// {% if %} {% elif %}... {% else %}
struct If {
  std::vector<IfBranch> branches;
  Body otherwise;
};
// {% for target in iterable if filter %} body {% else %} otherwise {% endfor %}
struct For {
  AssignTarget target;
  ExprPtr iterable, filter;
  Body body, otherwise;
};
// {% set target = value %}
struct Set {
  AssignTarget target;
  ExprPtr value;
};
// {% set name %}body{% endset %}
struct SetBlock {
  std::string name;
  Body body;
};
// {% macro name(parameters) %}body{% endmacro %}; defaults align with the last parameters.
struct Macro {
  std::string name;
  std::vector<std::string> parameters;
  std::vector<ExprPtr> defaults;
  Body body;
};
// {% break %} / {% continue %}
struct LoopControl {
  bool is_break;
};

}  // namespace ast

// One statement node.
struct Stmt {
  using Node = std::variant<ast::Text, ast::Output, ast::If, ast::For, ast::Set, ast::SetBlock, ast::Macro,
                            ast::LoopControl>;
  int line;
  Node node;
};

}  // namespace moe::jinja
