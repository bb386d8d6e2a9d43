#pragma once
// A hash map keyed by std::string that can be searched with a std::string_view without building a
// string: the tokenizer looks up slices of its input millions of times.
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace moe::tokenizer {

// Hashes std::string and std::string_view alike (is_transparent enables heterogeneous find).
struct TransparentStringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

template <class Value>
using StringMap = std::unordered_map<std::string, Value, TransparentStringHash, std::equal_to<>>;

}  // namespace moe::tokenizer
