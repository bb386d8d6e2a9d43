#pragma once
// Parses template source into its statement tree: the statement parser (tags and text) and the
// expression parser it calls for what is inside tags.
#include <string_view>

#include "jinja/ast.h"
#include "jinja/lexer.h"

namespace moe::jinja {

// The statements of a whole template. Throws moe::Error naming the line for a syntax error and for
// any tag, filter or test this renderer does not implement.
Body parse_template(std::string_view source);

// Parses Jinja expressions with Jinja's own precedence (which differs from Python's: `is` and
// filters bind tighter than arithmetic, `**` is left-associative).
class ExpressionParser {
 public:
  explicit ExpressionParser(TokenStream& stream) : stream_(stream) {}

  // A full expression, including `a if c else b` unless `with_conditional` is false.
  ExprPtr parse_expression(bool with_conditional = true);
  // Comma-separated expressions; several (or a trailing comma) make a tuple. `stop_name` is a
  // keyword that also ends the tuple (`recursive` after a for loop's iterable).
  ExprPtr parse_tuple(bool with_conditional = true, std::string_view stop_name = {});

 private:
  // operand (keyword operand)*, left-associative: `or` over `and`, `and` over `not`.
  ExprPtr parse_logical(std::string_view keyword, ExprPtr (ExpressionParser::*operand)());
  ExprPtr parse_or();
  ExprPtr parse_and();
  ExprPtr parse_not();
  ExprPtr parse_compare();
  ExprPtr parse_add_subtract();
  ExprPtr parse_concat();
  ExprPtr parse_multiply_divide();
  ExprPtr parse_power();
  ExprPtr parse_unary(bool with_filter);
  ExprPtr parse_primary();
  ExprPtr parse_string_concatenation(int line);
  ExprPtr parse_list(int line);
  ExprPtr parse_dict(int line);
  ExprPtr parse_postfix(ExprPtr node);
  ExprPtr parse_subscript(ExprPtr node);
  // The current Integer token's value (consumed); one beyond 64 bits is a compile error.
  int64_t integer_literal();
  ExprPtr parse_filters_and_tests(ExprPtr node);
  ExprPtr parse_filter(ExprPtr node);
  ExprPtr parse_test(ExprPtr node);
  ArgumentList parse_call_arguments();

  // Whether the current token ends a tuple.
  bool at_tuple_end(std::string_view stop_name) const;

  TokenStream& stream_;
};

}  // namespace moe::jinja
