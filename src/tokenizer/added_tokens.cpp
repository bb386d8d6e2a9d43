#include "tokenizer/added_tokens.h"

#include <utf8proc.h>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/utf8.h"

namespace moe::tokenizer {
namespace {

// Unicode character classes that lstrip, rstrip and single_word need: the White_Space property
// (Rust's char::is_whitespace) and the regex class \w (letters, marks, decimal digits, connector
// punctuation and the join controls).
bool is_white_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

bool is_word_character(char32_t c) {
  if (c == 0x200C || c == 0x200D) return true;  // zero-width (non-)joiner
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(c))) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_PC:
      return true;
    default:
      return false;
  }
}

uint64_t edge_key(int32_t node, unsigned char byte) { return (static_cast<uint64_t>(node) << 8) | byte; }

// The code point that starts at text[pos].
char32_t code_point_at(std::string_view text, size_t pos) {
  return decode_code_point(text.substr(pos), scan_utf8_sequence(text.substr(pos)).length);
}

// The start of the character that ends at text[pos - 1].
size_t previous_character_start(std::string_view text, size_t pos) {
  do --pos;
  while (pos > 0 && (static_cast<unsigned char>(text[pos]) & 0xC0) == 0x80);
  return pos;
}

}  // namespace

AddedToken AddedToken::from_json(const nlohmann::json& entry, const std::string& source) {
  if (!entry.contains("id") || !entry.contains("content"))
    throw Error(source + ": added token without \"id\" or \"content\": " + entry.dump());
  AddedToken token;
  token.id = entry.at("id").get<int32_t>();
  token.content = entry.at("content").get<std::string>();
  token.special = entry.value("special", false);
  token.lstrip = entry.value("lstrip", false);
  token.rstrip = entry.value("rstrip", false);
  token.single_word = entry.value("single_word", false);
  // tokenizers' default: a non-special token is matched in normalized text.
  token.normalized = entry.value("normalized", !token.special);
  return token;
}

AddedTokenMatcher::AddedTokenMatcher(const std::vector<std::string>& patterns, std::vector<AddedToken> tokens)
    : tokens_(std::move(tokens)) {
  for (size_t i = 0; i < patterns.size(); ++i) {
    if (patterns[i].empty()) continue;
    int32_t node = 0;
    for (unsigned char byte : patterns[i]) {
      auto [edge, inserted] = edges_.try_emplace(edge_key(node, byte), static_cast<int32_t>(token_at_node_.size()));
      if (inserted) token_at_node_.push_back(-1);
      node = edge->second;
    }
    // Two tokens with one pattern: the first listed wins.
    if (token_at_node_[node] < 0) token_at_node_[node] = static_cast<int>(i);
    can_start_[static_cast<unsigned char>(patterns[i][0])] = true;
  }
}

std::pair<int, size_t> AddedTokenMatcher::longest_match(std::string_view text, size_t pos) const {
  std::pair<int, size_t> best{-1, pos};
  int32_t node = 0;
  for (size_t i = pos; i < text.size(); ++i) {
    auto edge = edges_.find(edge_key(node, static_cast<unsigned char>(text[i])));
    if (edge == edges_.end()) break;
    node = edge->second;
    if (token_at_node_[node] >= 0) best = {token_at_node_[node], i + 1};
  }
  return best;
}

bool AddedTokenMatcher::is_whole_word(std::string_view text, size_t start, size_t end) {
  const bool word_before = start > 0 && is_word_character(code_point_at(text, previous_character_start(text, start)));
  const bool word_after = end < text.size() && is_word_character(code_point_at(text, end));
  return !word_before && !word_after;
}

std::vector<Segment> AddedTokenMatcher::split(std::string_view text, bool parse_special) const {
  std::vector<Segment> segments;
  size_t text_start = 0;  // where the pending plain text begins
  size_t pos = 0;
  while (pos < text.size()) {
    if (!can_start_[static_cast<unsigned char>(text[pos])]) {
      ++pos;
      continue;
    }
    const auto [index, match_end] = longest_match(text, pos);
    if (index < 0) {
      ++pos;
      continue;
    }
    const AddedToken& token = tokens_[index];
    if ((token.special && !parse_special) || (token.single_word && !is_whole_word(text, pos, match_end))) {
      pos = match_end;
      continue;
    }
    size_t start = pos, stop = match_end;
    if (token.lstrip)
      while (start > text_start && is_white_space(code_point_at(text, previous_character_start(text, start))))
        start = previous_character_start(text, start);
    if (token.rstrip)
      while (stop < text.size() && is_white_space(code_point_at(text, stop)))
        stop += scan_utf8_sequence(text.substr(stop)).length;
    if (text_start < start) segments.push_back({text.substr(text_start, start - text_start)});
    segments.push_back({text.substr(start, stop - start), token.id});
    text_start = pos = stop;
  }
  if (text_start < text.size()) segments.push_back({text.substr(text_start)});
  return segments;
}

}  // namespace moe::tokenizer
