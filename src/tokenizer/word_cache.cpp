#include "tokenizer/word_cache.h"

namespace moe::tokenizer {

bool WordCache::append_cached(std::string_view word, std::vector<int32_t>& out) const {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(word);
  if (it == entries_.end()) return false;
  out.insert(out.end(), it->second.begin(), it->second.end());
  return true;
}

void WordCache::insert(std::string_view word, const int32_t* ids, size_t count) {
  std::lock_guard lock(mutex_);
  if (entries_.size() >= capacity_) entries_.clear();
  entries_.try_emplace(std::string(word), ids, ids + count);
}

}  // namespace moe::tokenizer
