#pragma once
// The encoder's hot path: most words of a text were seen before, so their BPE ids are remembered.
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/string_map.h"

namespace moe::tokenizer {

// A thread-safe map from a pre-tokenized word to its ids, bounded in size: when full it starts over,
// so a long-running server keeps the words of its current traffic.
class WordCache {
 public:
  explicit WordCache(size_t capacity) : capacity_(capacity) {}

  // Appends the cached ids of `word` to `out` and returns true, or returns false on a miss.
  bool append_cached(std::string_view word, std::vector<int32_t>& out) const;
  void insert(std::string_view word, const int32_t* ids, size_t count);

 private:
  size_t capacity_;
  mutable std::mutex mutex_;
  StringMap<std::vector<int32_t>> entries_;
};

}  // namespace moe::tokenizer
