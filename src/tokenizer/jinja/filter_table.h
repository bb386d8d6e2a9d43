#pragma once
// The filter registry's parts: each filter source file adds its own filters to the table.
#include <string_view>
#include <unordered_map>

#include "tokenizer/jinja/filters.h"

namespace moe::tokenizer::jinja {

using FilterTable = std::unordered_map<std::string_view, Filter>;

// Filters that turn one value into another: text, numbers, tojson, default.
void add_scalar_filters(FilterTable& table);
// Filters over sequences: length, first, last, join, map, selectattr, ...
void add_sequence_filters(FilterTable& table);

}  // namespace moe::tokenizer::jinja
