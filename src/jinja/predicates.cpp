// Jinja's tests, the names after `is`: defined, none, string, mapping, divisibleby, equalto, ...
#include "jinja/scope.h"

#include <unordered_map>

namespace moe::jinja {

namespace {

using Kind = Value::Kind;

// A test that takes no argument beyond the value itself.
template <bool (*Check)(const Value&)>
bool unary(const Value& value, const CallArgs& args) {
  BoundArguments("test", args, {});
  return Check(value);
}

// A test comparing the value with one argument.
template <CompareOperator Op>
bool comparison(const Value& value, const CallArgs& args) {
  return compare(Op, value, BoundArguments("comparison test", args, {"other"}, 1).get_or(0, Value()));
}

bool is_defined(const Value& v) { return !v.is_undefined(); }
bool is_undefined(const Value& v) { return v.is_undefined(); }
bool is_none(const Value& v) { return v.is_none(); }
bool is_boolean(const Value& v) { return v.kind() == Kind::Bool; }
bool is_true(const Value& v) { return v.kind() == Kind::Bool && v.as_bool(); }
bool is_false(const Value& v) { return v.kind() == Kind::Bool && !v.as_bool(); }
bool is_integer(const Value& v) { return v.kind() == Kind::Int; }
bool is_float(const Value& v) { return v.kind() == Kind::Float; }
// Python's bool is a Number, so `true is number` holds.
bool is_number(const Value& v) { return v.is_numeric(); }
bool is_string(const Value& v) { return v.is_string(); }
bool is_mapping(const Value& v) { return v.kind() == Kind::Dict; }
// Jinja's Undefined supports len() and iteration, so it counts as a sequence and an iterable.
bool is_iterable(const Value& v) {
  return v.is_undefined() || v.is_string() || v.kind() == Kind::List || v.kind() == Kind::Dict;
}
// Undefined defines __call__ (to raise), so Python's callable() accepts it.
bool is_callable(const Value& v) { return v.kind() == Kind::Callable || v.is_undefined(); }

// `value % divisor == expected`, as Jinja's odd, even and divisibleby tests compute it.
bool remainder_is(const Value& value, const Value& divisor, int64_t expected) {
  return values_equal(arithmetic(ArithmeticOperator::Modulo, value, divisor), Value::integer(expected));
}

bool is_odd(const Value& v) { return remainder_is(v, Value::integer(2), 1); }
bool is_even(const Value& v) { return remainder_is(v, Value::integer(2), 0); }

bool is_divisible_by(const Value& value, const CallArgs& args) {
  return remainder_is(value, BoundArguments("divisibleby", args, {"num"}, 1).get_or(0, Value()), 0);
}

bool is_in(const Value& value, const CallArgs& args) {
  return contains(BoundArguments("in", args, {"seq"}, 1).get_or(0, Value()), value);
}

}  // namespace

Predicate find_predicate(std::string_view name) {
  static const std::unordered_map<std::string_view, Predicate> table = {
      {"defined", unary<is_defined>},
      {"undefined", unary<is_undefined>},
      {"none", unary<is_none>},
      {"boolean", unary<is_boolean>},
      {"true", unary<is_true>},
      {"false", unary<is_false>},
      {"integer", unary<is_integer>},
      {"float", unary<is_float>},
      {"number", unary<is_number>},
      {"string", unary<is_string>},
      {"mapping", unary<is_mapping>},
      {"iterable", unary<is_iterable>},
      {"sequence", unary<is_iterable>},
      {"callable", unary<is_callable>},
      {"odd", unary<is_odd>},
      {"even", unary<is_even>},
      {"divisibleby", is_divisible_by},
      {"in", is_in},
      {"eq", comparison<CompareOperator::Equal>},
      {"equalto", comparison<CompareOperator::Equal>},
      {"==", comparison<CompareOperator::Equal>},
      {"ne", comparison<CompareOperator::NotEqual>},
      {"!=", comparison<CompareOperator::NotEqual>},
      {"lt", comparison<CompareOperator::Less>},
      {"lessthan", comparison<CompareOperator::Less>},
      {"<", comparison<CompareOperator::Less>},
      {"le", comparison<CompareOperator::LessEqual>},
      {"<=", comparison<CompareOperator::LessEqual>},
      {"gt", comparison<CompareOperator::Greater>},
      {"greaterthan", comparison<CompareOperator::Greater>},
      {">", comparison<CompareOperator::Greater>},
      {"ge", comparison<CompareOperator::GreaterEqual>},
      {">=", comparison<CompareOperator::GreaterEqual>},
  };
  const auto it = table.find(name);
  return it == table.end() ? nullptr : it->second;
}

}  // namespace moe::jinja
