#include "jinja/parser.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "jinja/template.h"

namespace moe::jinja {

namespace {

template <typename Node>
ExprPtr make(int line, Node node) {
  return std::make_unique<Expr>(Expr{line, std::move(node)});
}

}  // namespace

ExprPtr ExpressionParser::parse_expression(bool with_conditional) {
  if (!with_conditional) return parse_or();
  const int line = stream_.current().line;
  ExprPtr then = parse_or();
  while (stream_.skip_if(TokenType::Name, "if")) {
    ExprPtr condition = parse_or();
    ExprPtr otherwise = stream_.skip_if(TokenType::Name, "else") ? parse_expression() : nullptr;
    then = make(line, ast::Conditional{std::move(condition), std::move(then), std::move(otherwise)});
  }
  return then;
}

bool ExpressionParser::at_tuple_end(std::string_view stop_name) const {
  if (stream_.at(TokenType::VariableEnd) || stream_.at(TokenType::BlockEnd) || stream_.at_operator(")")) return true;
  return !stop_name.empty() && stream_.at_name(stop_name);
}

ExprPtr ExpressionParser::parse_tuple(bool with_conditional, std::string_view stop_name) {
  const int line = stream_.current().line;
  std::vector<ExprPtr> items;
  bool is_tuple = false;
  while (true) {
    if (!items.empty()) stream_.expect(TokenType::Operator, ",", "','");
    if (at_tuple_end(stop_name)) break;
    items.push_back(parse_expression(with_conditional));
    if (!stream_.at_operator(",")) break;
    is_tuple = true;
  }
  if (!is_tuple) {
    if (items.empty()) stream_.fail("expected an expression, got " + stream_.describe_current());
    return std::move(items.front());
  }
  return make(line, ast::ListLiteral{std::move(items), true});
}

ExprPtr ExpressionParser::parse_logical(std::string_view keyword, ExprPtr (ExpressionParser::*operand)()) {
  ExprPtr left = (this->*operand)();
  while (stream_.at_name(keyword)) {
    const int line = stream_.next().line;
    left = make(line, ast::Logical{keyword == "and", std::move(left), (this->*operand)()});
  }
  return left;
}

ExprPtr ExpressionParser::parse_or() { return parse_logical("or", &ExpressionParser::parse_and); }

ExprPtr ExpressionParser::parse_and() { return parse_logical("and", &ExpressionParser::parse_not); }

ExprPtr ExpressionParser::parse_not() {
  if (stream_.at_name("not")) {
    const int line = stream_.next().line;
    return make(line, ast::Unary{ast::UnaryOperator::Not, parse_not()});
  }
  return parse_compare();
}

ExprPtr ExpressionParser::parse_compare() {
  const int line = stream_.current().line;
  ExprPtr first = parse_add_subtract();
  std::vector<ast::ComparisonLink> links;
  static const std::pair<std::string_view, CompareOperator> kOperators[] = {
      {"==", CompareOperator::Equal}, {"!=", CompareOperator::NotEqual},     {"<", CompareOperator::Less},
      {"<=", CompareOperator::LessEqual}, {">", CompareOperator::Greater}, {">=", CompareOperator::GreaterEqual}};
  while (true) {
    ast::ComparisonLink link;
    const auto* symbol = std::find_if(std::begin(kOperators), std::end(kOperators),
                                      [&](const auto& entry) { return stream_.at_operator(entry.first); });
    if (symbol != std::end(kOperators)) {
      stream_.next();
      link.op = symbol->second;
    } else if (stream_.skip_if(TokenType::Name, "in")) {
      link.membership = true;
    } else if (stream_.at_name("not") && stream_.look().type == TokenType::Name && stream_.look().value == "in") {
      stream_.next();
      stream_.next();
      link.membership = link.negated_membership = true;
    } else {
      break;
    }
    link.operand = parse_add_subtract();
    links.push_back(std::move(link));
  }
  if (links.empty()) return first;
  return make(line, ast::Comparison{std::move(first), std::move(links)});
}

ExprPtr ExpressionParser::parse_add_subtract() {
  ExprPtr left = parse_concat();
  while (stream_.at_operator("+") || stream_.at_operator("-")) {
    const Token& op = stream_.next();
    const auto kind = op.value == "+" ? ArithmeticOperator::Add : ArithmeticOperator::Subtract;
    left = make(op.line, ast::Arithmetic{kind, std::move(left), parse_concat()});
  }
  return left;
}

ExprPtr ExpressionParser::parse_concat() {
  const int line = stream_.current().line;
  std::vector<ExprPtr> parts;
  parts.push_back(parse_multiply_divide());
  while (stream_.skip_if(TokenType::Operator, "~")) parts.push_back(parse_multiply_divide());
  if (parts.size() == 1) return std::move(parts.front());
  return make(line, ast::Concat{std::move(parts)});
}

ExprPtr ExpressionParser::parse_multiply_divide() {
  ExprPtr left = parse_power();
  static const std::pair<std::string_view, ArithmeticOperator> kOperators[] = {
      {"*", ArithmeticOperator::Multiply},
      {"/", ArithmeticOperator::Divide},
      {"//", ArithmeticOperator::FloorDivide},
      {"%", ArithmeticOperator::Modulo}};
  while (true) {
    const int line = stream_.current().line;
    const auto* match = std::find_if(std::begin(kOperators), std::end(kOperators),
                                     [&](const auto& entry) { return stream_.at_operator(entry.first); });
    if (match == std::end(kOperators)) return left;
    stream_.next();
    left = make(line, ast::Arithmetic{match->second, std::move(left), parse_power()});
  }
}

ExprPtr ExpressionParser::parse_power() {
  ExprPtr left = parse_unary(true);
  while (stream_.at_operator("**")) {
    const int line = stream_.next().line;
    left = make(line, ast::Arithmetic{ArithmeticOperator::Power, std::move(left), parse_unary(true)});
  }
  return left;
}

ExprPtr ExpressionParser::parse_unary(bool with_filter) {
  const int line = stream_.current().line;
  ExprPtr node;
  if (stream_.skip_if(TokenType::Operator, "-"))
    node = make(line, ast::Unary{ast::UnaryOperator::Negate, parse_unary(false)});
  else if (stream_.skip_if(TokenType::Operator, "+"))
    node = make(line, ast::Unary{ast::UnaryOperator::Plus, parse_unary(false)});
  else
    node = parse_primary();
  node = parse_postfix(std::move(node));
  return with_filter ? parse_filters_and_tests(std::move(node)) : std::move(node);
}

ExprPtr ExpressionParser::parse_primary() {
  const Token& token = stream_.current();
  const int line = token.line;
  switch (token.type) {
    case TokenType::Name: {
      const std::string name = stream_.next().value;
      if (name == "true" || name == "True") return make(line, ast::Literal{Value::boolean(true)});
      if (name == "false" || name == "False") return make(line, ast::Literal{Value::boolean(false)});
      if (name == "none" || name == "None") return make(line, ast::Literal{Value::none()});
      return make(line, ast::Name{name});
    }
    case TokenType::String:
      return parse_string_concatenation(line);
    case TokenType::Integer:
      return make(line, ast::Literal{Value::integer(integer_literal())});
    case TokenType::Float: {
      const double value = std::strtod(token.value.c_str(), nullptr);
      stream_.next();
      return make(line, ast::Literal{Value::number(value)});
    }
    default:
      break;
  }
  if (stream_.skip_if(TokenType::Operator, "(")) {
    ExprPtr inner = stream_.at_operator(")") ? make(line, ast::ListLiteral{{}, true}) : parse_tuple();
    stream_.expect(TokenType::Operator, ")", "')'");
    return inner;
  }
  if (stream_.skip_if(TokenType::Operator, "[")) return parse_list(line);
  if (stream_.skip_if(TokenType::Operator, "{")) return parse_dict(line);
  stream_.fail("unexpected " + stream_.describe_current());
}

// Adjacent string literals concatenate, as in Python: 'a' "b" is 'ab'.
ExprPtr ExpressionParser::parse_string_concatenation(int line) {
  std::string text;
  while (stream_.at(TokenType::String)) text += stream_.next().value;
  return make(line, ast::Literal{Value::string(std::move(text))});
}

ExprPtr ExpressionParser::parse_list(int line) {
  std::vector<ExprPtr> items;
  while (!stream_.at_operator("]")) {
    if (!items.empty()) stream_.expect(TokenType::Operator, ",", "','");
    if (stream_.at_operator("]")) break;
    items.push_back(parse_expression());
  }
  stream_.expect(TokenType::Operator, "]", "']'");
  return make(line, ast::ListLiteral{std::move(items), false});
}

ExprPtr ExpressionParser::parse_dict(int line) {
  std::vector<std::pair<ExprPtr, ExprPtr>> entries;
  while (!stream_.at_operator("}")) {
    if (!entries.empty()) stream_.expect(TokenType::Operator, ",", "','");
    if (stream_.at_operator("}")) break;
    ExprPtr key = parse_expression();
    stream_.expect(TokenType::Operator, ":", "':'");
    entries.emplace_back(std::move(key), parse_expression());
  }
  stream_.expect(TokenType::Operator, "}", "'}'");
  return make(line, ast::DictLiteral{std::move(entries)});
}

ExprPtr ExpressionParser::parse_postfix(ExprPtr node) {
  while (true) {
    if (stream_.at_operator(".") || stream_.at_operator("["))
      node = parse_subscript(std::move(node));
    else if (stream_.at_operator("("))
      node = make(stream_.current().line, ast::Call{std::move(node), parse_call_arguments()});
    else
      return node;
  }
}

int64_t ExpressionParser::integer_literal() {
  const std::string& text = stream_.current().value;
  errno = 0;
  const long long value = std::strtoll(text.c_str(), nullptr, 10);
  if (errno == ERANGE) stream_.fail("integer literal " + text + " is too large");
  stream_.next();
  return value;
}

ExprPtr ExpressionParser::parse_subscript(ExprPtr node) {
  const Token& opener = stream_.next();
  const int line = opener.line;
  if (opener.value == ".") {
    if (stream_.at(TokenType::Name)) return make(line, ast::Attribute{std::move(node), stream_.next().value});
    if (!stream_.at(TokenType::Integer)) stream_.fail("expected a name or a number after '.'");
    return make(line, ast::Subscript{std::move(node), make(line, ast::Literal{Value::integer(integer_literal())})});
  }
  // [expr] or [start:stop:step]; a comma-separated key would be a tuple, which no dict here holds.
  ExprPtr bounds[3];
  int colons = 0;
  while (!stream_.at_operator("]")) {
    if (stream_.skip_if(TokenType::Operator, ":")) {
      if (++colons > 2) stream_.fail("too many ':' in a slice");
      continue;
    }
    if (bounds[colons]) stream_.fail("expected ']' or ':', got " + stream_.describe_current());
    bounds[colons] = parse_expression();
  }
  stream_.next();
  if (colons == 0) {
    if (!bounds[0]) stream_.fail("expected a subscript inside '[]'");
    return make(line, ast::Subscript{std::move(node), std::move(bounds[0])});
  }
  return make(line, ast::Slice{std::move(node), std::move(bounds[0]), std::move(bounds[1]), std::move(bounds[2])});
}

ExprPtr ExpressionParser::parse_filters_and_tests(ExprPtr node) {
  while (true) {
    if (stream_.at_operator("|"))
      node = parse_filter(std::move(node));
    else if (stream_.at_name("is"))
      node = parse_test(std::move(node));
    else if (stream_.at_operator("("))
      node = make(stream_.current().line, ast::Call{std::move(node), parse_call_arguments()});
    else
      return node;
  }
}

ExprPtr ExpressionParser::parse_filter(ExprPtr node) {
  const int line = stream_.next().line;
  const std::string name = stream_.expect(TokenType::Name, {}, "a filter name").value;
  const Filter filter = find_filter(name);
  if (!filter) fail_at(line, "unsupported filter '" + name + "'");
  ArgumentList arguments = stream_.at_operator("(") ? parse_call_arguments() : ArgumentList{};
  return make(line, ast::FilterCall{std::move(node), name, filter, std::move(arguments)});
}

ExprPtr ExpressionParser::parse_test(ExprPtr node) {
  const int line = stream_.next().line;
  const bool negated = stream_.skip_if(TokenType::Name, "not");
  const std::string name = stream_.expect(TokenType::Name, {}, "a test name").value;
  const Predicate predicate = find_predicate(name);
  if (!predicate) fail_at(line, "unsupported test '" + name + "'");
  ArgumentList arguments;
  const bool starts_argument = stream_.at(TokenType::Name) || stream_.at(TokenType::String) ||
                               stream_.at(TokenType::Integer) || stream_.at(TokenType::Float) ||
                               stream_.at_operator("[") || stream_.at_operator("{");
  if (stream_.at_operator("(")) {
    arguments = parse_call_arguments();
  } else if (starts_argument && !stream_.at_name("else") && !stream_.at_name("or") && !stream_.at_name("and")) {
    // Jinja's one-argument form without parentheses: `n is divisibleby 3`.
    if (stream_.at_name("is")) stream_.fail("you cannot chain multiple tests with is");
    arguments.positional.push_back(parse_postfix(parse_primary()));
  }
  return make(line, ast::TestCall{std::move(node), name, predicate, std::move(arguments), negated});
}

ArgumentList ExpressionParser::parse_call_arguments() {
  stream_.expect(TokenType::Operator, "(", "'('");
  ArgumentList arguments;
  while (!stream_.at_operator(")")) {
    if (!arguments.positional.empty() || !arguments.keyword.empty()) stream_.expect(TokenType::Operator, ",", "','");
    if (stream_.at_operator(")")) break;
    if (stream_.at_operator("*") || stream_.at_operator("**")) stream_.fail("unsupported *args / **kwargs in a call");
    if (stream_.at(TokenType::Name) && stream_.look().type == TokenType::Operator && stream_.look().value == "=") {
      std::string name = stream_.next().value;
      stream_.next();
      arguments.keyword.emplace_back(std::move(name), parse_expression());
      continue;
    }
    if (!arguments.keyword.empty()) stream_.fail("a positional argument follows a keyword argument");
    arguments.positional.push_back(parse_expression());
  }
  stream_.next();
  return arguments;
}

}  // namespace moe::jinja
