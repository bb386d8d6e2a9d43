#include "tokenizer/tokenizer.h"

#include "common/error.h"
#include "tokenizer/tokenizer_parts.h"
#include "tokenizer/utf8.h"

namespace moe::tokenizer {

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool parse_special) const {
  std::string repaired;
  if (!is_valid_utf8(text)) {
    append_utf8_lossy(text, repaired);
    text = repaired;
  }
  std::vector<int32_t> ids;
  std::vector<std::string> words;
  for (const Segment& raw : parts_->raw_added_tokens.split(text, parse_special)) {
    if (raw.is_token()) {
      ids.push_back(raw.token_id);
      continue;
    }
    const std::string normalized = parts_->normalizer.normalize(raw.text);
    for (const Segment& piece : parts_->normalized_added_tokens.split(normalized, parse_special)) {
      if (piece.is_token()) {
        ids.push_back(piece.token_id);
        continue;
      }
      words.clear();
      parts_->pre_tokenizer.split(piece.text, words);
      for (const std::string& word : words) parts_->model.encode_word(word, ids);
    }
  }
  return ids;
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool skip_special) const {
  std::string bytes;
  for (int32_t id : ids) {
    if (id < 0) check_id(id);
    if (!knows(id) || (skip_special && parts_->token_kind[id] == TokenKind::Special)) continue;
    bytes += parts_->token_bytes[id];
  }
  std::string text;
  text.reserve(bytes.size());
  append_utf8_lossy(bytes, text);
  return text;
}

int32_t Tokenizer::vocab_size() const { return static_cast<int32_t>(parts_->token_kind.size()); }

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  auto added = parts_->added_token_ids.find(token);
  if (added != parts_->added_token_ids.end()) return added->second;
  return parts_->model.token_to_id(token);
}

const std::string& Tokenizer::id_to_token(int32_t id) const {
  check_id(id);
  return parts_->token_spelling[id];
}

const std::string& Tokenizer::token_bytes(int32_t id) const {
  check_id(id);
  return parts_->token_bytes[id];
}

bool Tokenizer::is_special(int32_t id) const {
  return id >= 0 && id < vocab_size() && parts_->token_kind[id] == TokenKind::Special;
}

bool Tokenizer::knows(int32_t id) const {
  return id >= 0 && id < vocab_size() && parts_->token_kind[id] != TokenKind::Unknown;
}

void Tokenizer::check_id(int32_t id) const {
  if (!knows(id))
    throw Error("token id " + std::to_string(id) + " is not in the vocabulary of " + parts_->source +
                " (ids 0.." + std::to_string(vocab_size() - 1) + ")");
}

}  // namespace moe::tokenizer
