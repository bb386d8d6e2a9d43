#include "tokenizer/jinja/value.h"

namespace moe::tokenizer::jinja {

const Value* Dict::find(std::string_view key) const {
  // Linear search: template dicts (messages, tool schemas) hold a handful of keys.
  for (const auto& [name, value] : entries_)
    if (name == key) return &value;
  return nullptr;
}

void Dict::set(std::string key, Value value) {
  for (auto& [name, existing] : entries_) {
    if (name == key) {
      existing = std::move(value);
      return;
    }
  }
  entries_.emplace_back(std::move(key), std::move(value));
}

Value Value::list(std::vector<Value> items) {
  return Value(std::shared_ptr<const ListData>(std::make_shared<ListData>(ListData{std::move(items), false})));
}

Value Value::tuple(std::vector<Value> items) {
  return Value(std::shared_ptr<const ListData>(std::make_shared<ListData>(ListData{std::move(items), true})));
}

Value Value::dict(Dict dict) { return Value(std::shared_ptr<const Dict>(std::make_shared<Dict>(std::move(dict)))); }

Value Value::make_namespace(Dict attributes) {
  return Value(std::make_shared<Namespace>(Namespace{std::move(attributes)}));
}

Value Value::callable(std::string name, std::function<Value(const CallArgs&)> invoke) {
  return Value(std::shared_ptr<const Callable>(std::make_shared<Callable>(Callable{std::move(name), std::move(invoke)})));
}

int64_t Value::as_integer() const {
  if (kind() == Kind::Bool) return as_bool() ? 1 : 0;
  return std::get<int64_t>(data_);
}

double Value::as_double() const {
  if (kind() == Kind::Float) return std::get<double>(data_);
  return static_cast<double>(as_integer());
}

bool Value::truthy() const {
  switch (kind()) {
    case Kind::Undefined:
    case Kind::None:
      return false;
    case Kind::Bool:
      return as_bool();
    case Kind::Int:
      return as_integer() != 0;
    case Kind::Float:
      return as_double() != 0.0;
    case Kind::String:
      return !as_string().empty();
    case Kind::List:
      return !as_list().items.empty();
    case Kind::Dict:
      return as_dict().size() != 0;
    case Kind::Namespace:
    case Kind::Callable:
      return true;
  }
  return false;
}

std::string Value::type_name() const {
  switch (kind()) {
    case Kind::Undefined:
      return "Undefined";
    case Kind::None:
      return "NoneType";
    case Kind::Bool:
      return "bool";
    case Kind::Int:
      return "int";
    case Kind::Float:
      return "float";
    case Kind::String:
      return "str";
    case Kind::List:
      return as_list().is_tuple ? "tuple" : "list";
    case Kind::Dict:
      return "dict";
    case Kind::Namespace:
      return "Namespace";
    case Kind::Callable:
      return "function";
  }
  return "object";
}

bool Value::same_object(const Value& other) const {
  if (kind() != other.kind()) return false;
  if (kind() == Kind::Namespace) return &as_namespace() == &other.as_namespace();
  if (kind() == Kind::Callable) return &as_callable() == &other.as_callable();
  return false;
}

void require_defined(const Value& value) {
  if (!value.is_undefined()) return;
  const std::string& hint = value.undefined_hint();
  throw RenderFailure(hint.empty() ? "use of an undefined value" : hint);
}

}  // namespace moe::tokenizer::jinja
