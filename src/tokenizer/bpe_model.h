#pragma once
// The "model" of tokenizer.json for byte-level BPE: the vocabulary, the merges ranked by their
// order in the file, and the merge loop that turns one pre-tokenized word into ids.
#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/merge_table.h"
#include "tokenizer/string_map.h"
#include "tokenizer/word_cache.h"

namespace moe::tokenizer {

// Encodes words by applying the lowest-ranked applicable merge first, as tokenizers' BPE does.
class BpeModel {
 public:
  // Reads a model of type BPE: "vocab", "merges" ("a b" strings or [a, b] pairs), "ignore_merges".
  // Throws moe::Error naming `source` for a merge outside the vocabulary, or a vocabulary missing one
  // of the 256 byte-level characters (then it is not a byte-level BPE).
  static BpeModel from_json(const nlohmann::json& model, const std::string& source);

  // Appends the ids of one pre-tokenized word spelled in the byte-level alphabet (cached).
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  const StringMap<int32_t>& vocab() const { return vocab_; }

 private:
  BpeModel() = default;
  // The merge loop itself, for a word the cache does not hold.
  void merge_word(std::string_view word, std::vector<int32_t>& out) const;

  StringMap<int32_t> vocab_;
  MergeTable merges_;
  bool ignore_merges_ = false;
  std::unique_ptr<WordCache> cache_;
};

}  // namespace moe::tokenizer
