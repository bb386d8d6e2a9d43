#pragma once
// The values a chat template computes with, modelled on the Python objects Jinja sees when
// transformers renders a template: None, bool, int, float, str, list/tuple, dict (insertion
// ordered), namespace, callables, and Jinja's Undefined; and what Python does with them:
// operators, attribute and item access, str()/repr(), and JSON in and out.
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace moe::jinja {

class Value;

// A failure while rendering (a type error, a bad argument); the evaluator adds the template line.
class RenderFailure : public std::runtime_error {
 public:
  explicit RenderFailure(const std::string& what) : std::runtime_error(what) {}
};

// Jinja's Undefined: what a missing variable, key or attribute evaluates to. `hint` says what was
// missing, for the error raised when an undefined value is used where a real one is needed.
struct Undefined {
  std::string hint;
};

// Python's None.
struct None {};

// A list or a tuple; templates cannot mutate either (transformers uses an immutable sandbox).
struct ListData {
  std::vector<Value> items;
  bool is_tuple = false;
};

// A dict with string keys that iterates in insertion order, as Python's dict does.
class Dict {
 public:
  using Entry = std::pair<std::string, Value>;

  // The value stored under `key`, or nullptr.
  const Value* find(std::string_view key) const;
  // Inserts `key`, or replaces its value while keeping its original position.
  void set(std::string key, Value value);
  const std::vector<Entry>& entries() const { return entries_; }
  size_t size() const;  // defined below Value: clang needs Value complete to instantiate the vector's size()

 private:
  std::vector<Entry> entries_;
};

// Positional and keyword arguments of a call, filter or test.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

// Something a template can call: a macro, a global function or a bound method.
struct Callable {
  std::string name;
  std::function<Value(const CallArgs&)> invoke;
};

// The mutable object `namespace(...)` creates; `{% set ns.attr = ... %}` writes into it.
struct Namespace {
  Dict attributes;
};

// One template value. Copies are cheap for containers (shared, immutable) and share namespaces.
class Value {
 public:
  enum class Kind { Undefined, None, Bool, Int, Float, String, List, Dict, Namespace, Callable };

  // An undefined value with no hint (an empty loop's previtem and the like).
  Value() : data_(Undefined{}) {}

  static Value undefined(std::string hint) { return Value(Undefined{std::move(hint)}); }
  static Value none() { return Value(None{}); }
  static Value boolean(bool b) { return Value(b); }
  static Value integer(int64_t i) { return Value(i); }
  static Value number(double d) { return Value(d); }
  static Value string(std::string s) { return Value(std::move(s)); }
  static Value list(std::vector<Value> items);
  static Value tuple(std::vector<Value> items);
  static Value dict(Dict dict);
  static Value make_namespace(Dict attributes);
  static Value callable(std::string name, std::function<Value(const CallArgs&)> invoke);

  Kind kind() const { return static_cast<Kind>(data_.index()); }
  bool is_undefined() const { return kind() == Kind::Undefined; }
  bool is_none() const { return kind() == Kind::None; }
  bool is_string() const { return kind() == Kind::String; }
  // int or bool: Python's bool is an int subclass, so True + 1 == 2.
  bool is_integral() const { return kind() == Kind::Int || kind() == Kind::Bool; }
  // int, bool or float: what Python arithmetic accepts.
  bool is_numeric() const { return is_integral() || kind() == Kind::Float; }

  bool as_bool() const { return std::get<bool>(data_); }
  const std::string& as_string() const { return std::get<std::string>(data_); }
  const std::string& undefined_hint() const { return std::get<Undefined>(data_).hint; }
  const ListData& as_list() const { return *std::get<std::shared_ptr<const ListData>>(data_); }
  const Dict& as_dict() const { return *std::get<std::shared_ptr<const Dict>>(data_); }
  Namespace& as_namespace() const { return *std::get<std::shared_ptr<Namespace>>(data_); }
  const Callable& as_callable() const { return *std::get<std::shared_ptr<const Callable>>(data_); }
  // The value of an int or bool.
  int64_t as_integer() const;
  // The value of any numeric kind as a double.
  double as_double() const;

  // Python truthiness; Undefined is false.
  bool truthy() const;
  // The Python type name used in error messages ("str", "dict", "NoneType", ...).
  std::string type_name() const;
  // True when both refer to the same namespace or callable object (Python's `is`).
  bool same_object(const Value& other) const;

 private:
  using Storage = std::variant<Undefined, None, bool, int64_t, double, std::string,
                               std::shared_ptr<const ListData>, std::shared_ptr<const Dict>,
                               std::shared_ptr<Namespace>, std::shared_ptr<const Callable>>;
  template <typename T>
  explicit Value(T data) : data_(std::move(data)) {}

  Storage data_;
};

inline size_t Dict::size() const { return entries_.size(); }

// Throws a RenderFailure naming what was undefined when `value` is Undefined (Jinja's default
// Undefined fails on arithmetic, attribute access and calls).
void require_defined(const Value& value);

// Python's operators on template values: arithmetic, equality, ordering and `in`, raising where
// Python raises TypeError (as a RenderFailure).

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

// Attribute access, subscripts, slices and iteration as Jinja resolves them: `message.content` and
// `message['content']` both find the dict item, `text.strip` finds the str method, and anything
// missing is Undefined rather than an error.

// `object.name`: a method of str/list/dict first (as Python's getattr), then a dict item or a
// namespace attribute; otherwise Undefined. Fails when `object` itself is Undefined.
Value get_attribute(const Value& object, const std::string& name);
// `object[key]`: a dict item or a list/str element (negative indexes count from the end) first,
// then, for a string key, the attribute; otherwise Undefined.
Value get_item(const Value& object, const Value& key);
// `object[start:stop:step]` on a list, tuple or str; each bound may be None/Undefined (omitted).
Value get_slice(const Value& object, const Value& start, const Value& stop, const Value& step);
// What `for x in value` visits: list items, dict keys, str characters; Undefined is empty.
std::vector<Value> iterate(const Value& value);

// Text forms of template values exactly as Python writes them: str() for `{{ x }}`, `~` and the
// `string` filter, repr() for the items of a printed list or dict.

// str(value); Undefined prints as "". Throws RenderFailure for callables, whose Python text is an
// object address no renderer could reproduce.
std::string to_str(const Value& value);
// repr(value).
std::string to_repr(const Value& value);
// repr(float): the shortest text that round-trips, "1.0", "1e+16", "1.5e-05", "nan", "inf".
std::string format_float(double value);

// Conversion between JSON documents and template values: request data (messages, tools) becomes
// values, and the `tojson` filter writes values the way transformers' tojson (json.dumps) does.

// Options of Python's json.dumps that transformers' tojson filter exposes.
struct JsonDumpOptions {
  // The indent unit; absent writes everything on one line.
  std::optional<std::string> indent;
  // Item and key separators; absent means json.dumps' defaults for the indent mode.
  std::optional<std::string> item_separator, key_separator;
  bool sort_keys = false;
  bool ensure_ascii = false;
};

// The value of a JSON document; objects keep their key order (hence ordered_json). Converting recurses
// once per level, so a document nesting deeper than kMaxJsonDepth is a RenderFailure (client JSON is
// bounded when it is parsed; this keeps any other caller off the end of the stack).
Value value_from_json(const nlohmann::ordered_json& json);

// json.dumps(value, ...). Throws RenderFailure for values JSON cannot hold (Undefined, callables,
// namespaces), as json.dumps raises TypeError.
std::string dump_json(const Value& value, const JsonDumpOptions& options);

}  // namespace moe::jinja
