// Tokenizer: loading tokenizer.json into the parts of the pipeline, rejecting what is not a
// byte-level BPE tokenizer with an error that says what is supported; then encoding and decoding
// through those parts.
#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <utility>

#include "common/error.h"
#include "common/json_file.h"
#include "common/utf8.h"
#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/pre_tokenizer.h"

namespace moe::tokenizer {

// What an id stands for, so that decode can skip or reject it without a look-up.
enum class TokenKind : uint8_t { Unknown, Regular, Special };

// The loaded pipeline (normalizer → pre-tokenizer → BPE, with added tokens matched before) and the
// per-id tables of the decoder.
struct TokenizerParts {
  TokenizerParts(std::string source, Normalizer normalizer, PreTokenizer pre_tokenizer, BpeModel model)
      : source(std::move(source)),
        normalizer(std::move(normalizer)),
        pre_tokenizer(std::move(pre_tokenizer)),
        model(std::move(model)) {}

  std::string source;  // the tokenizer.json path, for error messages
  Normalizer normalizer;
  PreTokenizer pre_tokenizer;
  BpeModel model;
  AddedTokenMatcher raw_added_tokens;         // tokens with normalized=false, matched in the raw text
  AddedTokenMatcher normalized_added_tokens;  // tokens with normalized=true, matched after normalizing
  StringMap<int32_t> added_token_ids;         // content → id
  std::vector<std::string> token_spelling;    // by id, as written in the file
  std::vector<std::string> token_bytes;       // by id, what the ByteLevel decoder makes of it
  std::vector<TokenKind> token_kind;          // by id
};

namespace {

// The "type" of a component spec, "null" for null, or the spec itself when it has no type.
std::string type_of(const nlohmann::json& spec) {
  if (spec.is_null()) return "null";
  return spec.is_object() ? spec.value("type", "") : spec.dump();
}

// Accepts only a byte-level BPE model.
void check_model_type(const nlohmann::json& model, const std::string& source) {
  // Files from old tokenizers versions may leave out the type of a BPE model.
  const std::string type = model.contains("type") || !model.contains("merges") ? type_of(model) : "BPE";
  if (type != "BPE") throw Error(source + ": unsupported model type '" + type + "' (supported: BPE)");
  for (const char* field : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    const auto value = model.find(field);
    if (value != model.end() && value->is_string() && !value->get<std::string>().empty())
      throw Error(source + ": BPE with a " + field + " is not byte-level BPE (unsupported)");
  }
}

// Decoding is the ByteLevel decoder's byte concatenation; no other decoder is implemented.
void check_decoder(const nlohmann::json& decoder, const std::string& source) {
  if (type_of(decoder) != "ByteLevel")
    throw Error(source + ": unsupported decoder type '" + type_of(decoder) + "' (supported: ByteLevel)");
}

// Registers an id in the per-id tables, growing them as needed.
void set_token(TokenizerParts& parts, int32_t id, const std::string& spelling, TokenKind kind) {
  if (id < 0) throw Error(parts.source + ": negative token id " + std::to_string(id) + " for '" + spelling + "'");
  if (static_cast<size_t>(id) >= parts.token_kind.size()) {
    parts.token_spelling.resize(id + 1);
    parts.token_bytes.resize(id + 1);
    parts.token_kind.resize(id + 1, TokenKind::Unknown);
  }
  parts.token_spelling[id] = spelling;
  // A token outside the byte-level alphabet (such as "<|im_end|>" written with a space) is its own bytes.
  parts.token_bytes[id] = ByteLevelAlphabet::instance().decode(spelling).value_or(spelling);
  parts.token_kind[id] = kind;
}

// The added tokens of the file with the ids tokenizers gives them: a content that is already a token
// keeps that token's id, any other takes the next id past the vocabulary and the added tokens so far.
// The file's "id" is not used: tokenizers ignores it too (it warns when they differ; in published
// files they agree). A content listed twice keeps its first id and takes the later flags.
std::vector<AddedToken> read_added_tokens(const TokenizerParts& parts, const nlohmann::json& entries) {
  const auto model_size = static_cast<int32_t>(parts.model.vocab().size());
  std::vector<AddedToken> tokens;
  StringMap<size_t> index_of_content;
  int32_t largest_id = -1;
  for (const auto& entry : entries) {
    AddedToken token = AddedToken::from_json(entry, parts.source);
    if (token.content.empty()) continue;
    if (auto known = index_of_content.find(token.content); known != index_of_content.end()) {
      token.id = tokens[known->second].id;
      tokens[known->second] = std::move(token);
      continue;
    }
    const auto vocabulary_id = parts.model.token_to_id(token.content);
    token.id = vocabulary_id ? *vocabulary_id : (largest_id >= model_size ? largest_id + 1 : model_size);
    largest_id = std::max(largest_id, token.id);
    index_of_content.emplace(token.content, tokens.size());
    tokens.push_back(std::move(token));
  }
  return tokens;
}

// Registers the added tokens and builds the two matchers (raw text and normalized text).
void add_added_tokens(TokenizerParts& parts, const nlohmann::json& entries) {
  std::vector<AddedToken> raw, normalized;
  std::vector<std::string> raw_patterns, normalized_patterns;
  for (AddedToken& token : read_added_tokens(parts, entries)) {
    set_token(parts, token.id, token.content, token.special ? TokenKind::Special : TokenKind::Regular);
    parts.added_token_ids.insert_or_assign(token.content, token.id);
    if (token.normalized) {
      normalized_patterns.push_back(parts.normalizer.normalize(token.content));
      normalized.push_back(std::move(token));
    } else {
      raw_patterns.push_back(token.content);
      raw.push_back(std::move(token));
    }
  }
  parts.raw_added_tokens = AddedTokenMatcher(raw_patterns, std::move(raw));
  parts.normalized_added_tokens = AddedTokenMatcher(normalized_patterns, std::move(normalized));
}

// Assembles the pipeline from a parsed tokenizer.json.
std::shared_ptr<TokenizerParts> build_parts(const nlohmann::json& file, const std::string& source) {
  if (!file.is_object() || !file.contains("model"))
    throw Error(source + ": not a tokenizer.json (no \"model\" object)");
  const nlohmann::json& model = file.at("model");
  check_model_type(model, source);
  check_decoder(file.value("decoder", nlohmann::json()), source);
  auto parts = std::make_shared<TokenizerParts>(
      source, Normalizer::from_json(file.value("normalizer", nlohmann::json()), source),
      PreTokenizer::from_json(file.value("pre_tokenizer", nlohmann::json()), source), BpeModel::from_json(model, source));
  for (const auto& [spelling, id] : parts->model.vocab()) set_token(*parts, id, spelling, TokenKind::Regular);
  add_added_tokens(*parts, file.value("added_tokens", nlohmann::json::array()));
  return parts;
}

}  // namespace

Tokenizer Tokenizer::load(const std::string& dir_or_file) {
  const std::string path = std::filesystem::is_directory(dir_or_file)
                               ? (std::filesystem::path(dir_or_file) / "tokenizer.json").string()
                               : dir_or_file;
  const nlohmann::json file = read_json_file(path);
  try {
    return Tokenizer(build_parts(file, path));
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + ": malformed tokenizer.json: " + e.what());
  }
}

Tokenizer Tokenizer::without_vocabulary(int32_t model_vocab_size) {
  nlohmann::json bytes = nlohmann::json::object();
  for (int byte = 0; byte < 256; ++byte) {
    std::string character;
    ByteLevelAlphabet::instance().encode(std::string(1, static_cast<char>(byte)), character);
    bytes[character] = model_vocab_size + byte;
  }
  const nlohmann::json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}};
  const nlohmann::json file = {{"model", {{"type", "BPE"}, {"vocab", bytes}, {"merges", nlohmann::json::array()}}},
                               {"pre_tokenizer", byte_level},
                               {"decoder", {{"type", "ByteLevel"}}}};
  return Tokenizer(build_parts(file, "(no tokenizer)"));
}

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
