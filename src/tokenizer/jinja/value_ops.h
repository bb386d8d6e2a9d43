#pragma once
// Python's operators on template values: arithmetic, equality, ordering and `in`, raising where
// Python raises TypeError (as a RenderFailure).
#include "tokenizer/jinja/value.h"

namespace moe::tokenizer::jinja {

// Binary arithmetic operators of Jinja expressions.
enum class ArithmeticOperator { Add, Subtract, Multiply, Divide, FloorDivide, Modulo, Power };
// Comparison operators of Jinja expressions.
enum class CompareOperator { Equal, NotEqual, Less, LessEqual, Greater, GreaterEqual };

// `a op b` with Python semantics (int/float promotion, str and list + and *, floor division).
Value arithmetic(ArithmeticOperator op, const Value& a, const Value& b);
// Unary minus and plus.
Value negate(const Value& a);
Value unary_plus(const Value& a);

// Python ==: numbers compare by value across int/float/bool, containers element-wise.
bool values_equal(const Value& a, const Value& b);
// `a op b` for any comparison operator; ordering works on numbers, strings and lists.
bool compare(CompareOperator op, const Value& a, const Value& b);
// `item in container`: substring, list membership or dict key.
bool contains(const Value& container, const Value& item);

}  // namespace moe::tokenizer::jinja
