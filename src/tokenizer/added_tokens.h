#pragma once
// "added_tokens" of tokenizer.json (special tokens such as <|im_end|>, and extra ones such as
// <think>): they are found in the text before anything else and never go through BPE.
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace moe::tokenizer {

// One added token and the flags that say how it is matched.
struct AddedToken {
  int32_t id = -1;  // as the file gives it; the loader re-derives it as tokenizers does
  std::string content;
  bool special = false;      // skipped by decode(skip_special); plain text when special tokens are not parsed
  bool lstrip = false;       // swallows the whitespace before it
  bool rstrip = false;       // swallows the whitespace after it
  bool single_word = false;  // matches only between non-word characters
  bool normalized = false;   // matched in the normalized text rather than the raw text

  // Reads an "added_tokens" entry; throws moe::Error naming `source` when "id" or "content" is missing.
  static AddedToken from_json(const nlohmann::json& entry, const std::string& source);
};

// A slice of the input: text for the normalizer and BPE, or one added token.
struct Segment {
  std::string_view text;
  int32_t token_id = -1;  // -1: plain text

  bool is_token() const { return token_id >= 0; }
};

// Finds added tokens leftmost-longest and non-overlapping (tokenizers' Aho-Corasick split), then
// applies their flags. A match rejected by its flags is not retried shorter: tokenizers does not.
class AddedTokenMatcher {
 public:
  AddedTokenMatcher() = default;
  // `patterns[i]` is the string that `tokens[i]` is found as (normalized content for normalized tokens).
  AddedTokenMatcher(const std::vector<std::string>& patterns, std::vector<AddedToken> tokens);

  // Cuts `text` (valid UTF-8) into non-empty segments. With parse_special false, special tokens are
  // left in the text (tokenizers' encode_special_tokens).
  std::vector<Segment> split(std::string_view text, bool parse_special) const;

 private:
  // The longest pattern starting at text[pos]: index into tokens_ and its end, or {-1, pos}.
  std::pair<int, size_t> longest_match(std::string_view text, size_t pos) const;
  // Whether a match [start, end) of a single_word token stands alone as a word.
  static bool is_whole_word(std::string_view text, size_t start, size_t end);

  std::vector<AddedToken> tokens_;
  // A byte trie over the patterns: edges keyed by node << 8 | byte, and the token ending at each node.
  std::unordered_map<uint64_t, int32_t> edges_;
  std::vector<int> token_at_node_{-1};
  bool can_start_[256] = {};
};

}  // namespace moe::tokenizer
