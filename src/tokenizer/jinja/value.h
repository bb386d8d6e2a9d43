#pragma once
// The values a chat template computes with, modelled on the Python objects Jinja sees when
// transformers renders a template: None, bool, int, float, str, list/tuple, dict (insertion
// ordered), namespace, callables, and Jinja's Undefined.
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace moe::tokenizer::jinja {

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
  size_t size() const { return entries_.size(); }

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

// Throws a RenderFailure naming what was undefined when `value` is Undefined (Jinja's default
// Undefined fails on arithmetic, attribute access and calls).
void require_defined(const Value& value);

}  // namespace moe::tokenizer::jinja
