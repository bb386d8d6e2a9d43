#include "tokenizer/incremental_detokenizer.h"

#include "tokenizer/utf8.h"

namespace moe::tokenizer {

std::string IncrementalDetokenizer::push(int32_t id) {
  if (id >= 0 && !tokenizer_.knows(id)) return "";
  const std::string& bytes = tokenizer_.token_bytes(id);
  if (skip_special_ && tokenizer_.is_special(id)) return "";
  pending_ += bytes;
  std::string text;
  const size_t consumed = append_complete_utf8_lossy(pending_, text);
  pending_.erase(0, consumed);
  return text;
}

std::string IncrementalDetokenizer::finish() {
  std::string text;
  append_utf8_lossy(pending_, text);
  pending_.clear();
  return text;
}

}  // namespace moe::tokenizer
