#include "tokenizer/jinja/filters.h"

#include "tokenizer/jinja/filter_table.h"

namespace moe::tokenizer::jinja {

Filter find_filter(std::string_view name) {
  static const FilterTable table = [] {
    FilterTable t;
    add_scalar_filters(t);
    add_sequence_filters(t);
    return t;
  }();
  const auto it = table.find(name);
  return it == table.end() ? nullptr : it->second;
}

}  // namespace moe::tokenizer::jinja
