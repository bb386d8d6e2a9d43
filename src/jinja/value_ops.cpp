#include "jinja/value.h"

#include <cmath>

namespace moe::jinja {

namespace {

const char* operator_symbol(ArithmeticOperator op) {
  switch (op) {
    case ArithmeticOperator::Add:
      return "+";
    case ArithmeticOperator::Subtract:
      return "-";
    case ArithmeticOperator::Multiply:
      return "*";
    case ArithmeticOperator::Divide:
      return "/";
    case ArithmeticOperator::FloorDivide:
      return "//";
    case ArithmeticOperator::Modulo:
      return "%";
    case ArithmeticOperator::Power:
      return "**";
  }
  return "?";
}

[[noreturn]] void unsupported_operands(const char* symbol, const Value& a, const Value& b) {
  throw RenderFailure(std::string("unsupported operand type(s) for ") + symbol + ": '" + a.type_name() + "' and '" +
                      b.type_name() + "'");
}

[[noreturn]] void overflow() { throw RenderFailure("integer overflow"); }

int64_t checked_add(int64_t x, int64_t y) {
  int64_t r;
  if (__builtin_add_overflow(x, y, &r)) overflow();
  return r;
}

int64_t checked_subtract(int64_t x, int64_t y) {
  int64_t r;
  if (__builtin_sub_overflow(x, y, &r)) overflow();
  return r;
}

int64_t checked_multiply(int64_t x, int64_t y) {
  int64_t r;
  if (__builtin_mul_overflow(x, y, &r)) overflow();
  return r;
}

// Python's int ** int for a non-negative exponent, by repeated squaring.
int64_t integer_power(int64_t base, int64_t exponent) {
  int64_t result = 1;
  while (exponent > 0) {
    if (exponent & 1) result = checked_multiply(result, base);
    exponent >>= 1;
    if (exponent > 0) base = checked_multiply(base, base);
  }
  return result;
}

Value integer_arithmetic(ArithmeticOperator op, int64_t x, int64_t y) {
  switch (op) {
    case ArithmeticOperator::Add:
      return Value::integer(checked_add(x, y));
    case ArithmeticOperator::Subtract:
      return Value::integer(checked_subtract(x, y));
    case ArithmeticOperator::Multiply:
      return Value::integer(checked_multiply(x, y));
    case ArithmeticOperator::Divide:
      if (y == 0) throw RenderFailure("division by zero");
      return Value::number(static_cast<double>(x) / static_cast<double>(y));
    case ArithmeticOperator::FloorDivide:
    case ArithmeticOperator::Modulo: {
      if (y == 0) throw RenderFailure("integer division or modulo by zero");
      int64_t quotient = x / y, remainder = x % y;
      // Python rounds the quotient toward negative infinity; the remainder takes the divisor's sign.
      if (remainder != 0 && ((remainder < 0) != (y < 0))) --quotient, remainder += y;
      return Value::integer(op == ArithmeticOperator::FloorDivide ? quotient : remainder);
    }
    case ArithmeticOperator::Power:
      if (y < 0) return Value::number(std::pow(static_cast<double>(x), static_cast<double>(y)));
      return Value::integer(integer_power(x, y));
  }
  return Value();
}

Value float_arithmetic(ArithmeticOperator op, double x, double y) {
  switch (op) {
    case ArithmeticOperator::Add:
      return Value::number(x + y);
    case ArithmeticOperator::Subtract:
      return Value::number(x - y);
    case ArithmeticOperator::Multiply:
      return Value::number(x * y);
    case ArithmeticOperator::Divide:
      if (y == 0) throw RenderFailure("float division by zero");
      return Value::number(x / y);
    case ArithmeticOperator::FloorDivide:
      if (y == 0) throw RenderFailure("float floor division by zero");
      return Value::number(std::floor(x / y));
    case ArithmeticOperator::Modulo: {
      if (y == 0) throw RenderFailure("float modulo");
      double remainder = std::fmod(x, y);
      if (remainder != 0 && ((remainder < 0) != (y < 0))) remainder += y;
      return Value::number(remainder);
    }
    case ArithmeticOperator::Power:
      return Value::number(std::pow(x, y));
  }
  return Value();
}

// seq * n for strings and lists, refusing results too large to be a prompt.
Value repeat(const Value& sequence, int64_t times) {
  const size_t unit = sequence.is_string() ? sequence.as_string().size() : sequence.as_list().items.size();
  constexpr int64_t kMaxRepeatedSize = int64_t{1} << 28;
  if (times > 0 && unit > 0 && times > kMaxRepeatedSize / static_cast<int64_t>(unit))
    throw RenderFailure("sequence repetition result is too large");
  if (sequence.is_string()) {
    std::string out;
    for (int64_t i = 0; i < times; ++i) out += sequence.as_string();
    return Value::string(std::move(out));
  }
  std::vector<Value> items;
  for (int64_t i = 0; i < times; ++i)
    items.insert(items.end(), sequence.as_list().items.begin(), sequence.as_list().items.end());
  return sequence.as_list().is_tuple ? Value::tuple(std::move(items)) : Value::list(std::move(items));
}

bool is_repeatable(const Value& v) { return v.is_string() || v.kind() == Value::Kind::List; }

// Python's ordering of two values that are not equal, or of two that are (for <= and >=).
bool ordered(CompareOperator op, const Value& a, const Value& b);

bool ordered_lists(CompareOperator op, const std::vector<Value>& a, const std::vector<Value>& b) {
  // Python compares at the first differing item, else by length.
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    if (!values_equal(a[i], b[i])) return ordered(op, a[i], b[i]);
  return ordered(op, Value::integer(static_cast<int64_t>(a.size())), Value::integer(static_cast<int64_t>(b.size())));
}

template <typename T>
bool apply_order(CompareOperator op, const T& x, const T& y) {
  switch (op) {
    case CompareOperator::Less:
      return x < y;
    case CompareOperator::LessEqual:
      return x <= y;
    case CompareOperator::Greater:
      return x > y;
    case CompareOperator::GreaterEqual:
      return x >= y;
    default:
      return false;
  }
}

const char* compare_symbol(CompareOperator op) {
  switch (op) {
    case CompareOperator::Less:
      return "<";
    case CompareOperator::LessEqual:
      return "<=";
    case CompareOperator::Greater:
      return ">";
    default:
      return ">=";
  }
}

bool ordered(CompareOperator op, const Value& a, const Value& b) {
  require_defined(a);
  require_defined(b);
  if (a.is_integral() && b.is_integral()) return apply_order(op, a.as_integer(), b.as_integer());
  if (a.is_numeric() && b.is_numeric()) return apply_order(op, a.as_double(), b.as_double());
  // UTF-8 byte order equals code point order, which is how Python orders str.
  if (a.is_string() && b.is_string()) return apply_order(op, a.as_string(), b.as_string());
  if (a.kind() == Value::Kind::List && b.kind() == Value::Kind::List &&
      a.as_list().is_tuple == b.as_list().is_tuple)
    return ordered_lists(op, a.as_list().items, b.as_list().items);
  throw RenderFailure(std::string("'") + compare_symbol(op) + "' not supported between instances of '" +
                      a.type_name() + "' and '" + b.type_name() + "'");
}

bool dicts_equal(const Dict& a, const Dict& b) {
  if (a.size() != b.size()) return false;
  for (const auto& [key, value] : a.entries()) {
    const Value* other = b.find(key);
    if (!other || !values_equal(value, *other)) return false;
  }
  return true;
}

}  // namespace

Value arithmetic(ArithmeticOperator op, const Value& a, const Value& b) {
  require_defined(a);
  require_defined(b);
  if (a.is_integral() && b.is_integral()) return integer_arithmetic(op, a.as_integer(), b.as_integer());
  if (a.is_numeric() && b.is_numeric()) return float_arithmetic(op, a.as_double(), b.as_double());
  if (op == ArithmeticOperator::Add && a.is_string() && b.is_string())
    return Value::string(a.as_string() + b.as_string());
  if (op == ArithmeticOperator::Add && a.kind() == Value::Kind::List && b.kind() == Value::Kind::List &&
      a.as_list().is_tuple == b.as_list().is_tuple) {
    std::vector<Value> items = a.as_list().items;
    items.insert(items.end(), b.as_list().items.begin(), b.as_list().items.end());
    return a.as_list().is_tuple ? Value::tuple(std::move(items)) : Value::list(std::move(items));
  }
  if (op == ArithmeticOperator::Multiply && is_repeatable(a) && b.is_integral()) return repeat(a, b.as_integer());
  if (op == ArithmeticOperator::Multiply && a.is_integral() && is_repeatable(b)) return repeat(b, a.as_integer());
  if (op == ArithmeticOperator::Modulo && a.is_string())
    throw RenderFailure("printf-style string formatting ('...' % args) is not supported");
  unsupported_operands(operator_symbol(op), a, b);
}

Value negate(const Value& a) {
  require_defined(a);
  if (a.is_integral()) return integer_arithmetic(ArithmeticOperator::Subtract, 0, a.as_integer());
  if (a.is_numeric()) return Value::number(-a.as_double());
  throw RenderFailure("bad operand type for unary -: '" + a.type_name() + "'");
}

Value unary_plus(const Value& a) {
  require_defined(a);
  if (a.is_integral()) return Value::integer(a.as_integer());
  if (a.is_numeric()) return a;
  throw RenderFailure("bad operand type for unary +: '" + a.type_name() + "'");
}

bool values_equal(const Value& a, const Value& b) {
  if (a.is_numeric() && b.is_numeric()) {
    if (a.is_integral() && b.is_integral()) return a.as_integer() == b.as_integer();
    return a.as_double() == b.as_double();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::Undefined:
    case Value::Kind::None:
      return true;
    case Value::Kind::String:
      return a.as_string() == b.as_string();
    case Value::Kind::List: {
      const ListData &x = a.as_list(), &y = b.as_list();
      if (x.is_tuple != y.is_tuple || x.items.size() != y.items.size()) return false;
      for (size_t i = 0; i < x.items.size(); ++i)
        if (!values_equal(x.items[i], y.items[i])) return false;
      return true;
    }
    case Value::Kind::Dict:
      return dicts_equal(a.as_dict(), b.as_dict());
    default:
      return a.same_object(b);
  }
}

bool compare(CompareOperator op, const Value& a, const Value& b) {
  if (op == CompareOperator::Equal) return values_equal(a, b);
  if (op == CompareOperator::NotEqual) return !values_equal(a, b);
  return ordered(op, a, b);
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::Undefined:
      return false;  // Jinja's Undefined iterates as empty.
    case Value::Kind::String:
      if (!item.is_string())
        throw RenderFailure("'in <string>' requires string as left operand, not " + item.type_name());
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Value::Kind::List:
      for (const Value& element : container.as_list().items)
        if (values_equal(element, item)) return true;
      return false;
    case Value::Kind::Dict:
      return item.is_string() && container.as_dict().find(item.as_string()) != nullptr;
    default:
      throw RenderFailure("argument of type '" + container.type_name() + "' is not iterable");
  }
}

}  // namespace moe::jinja
