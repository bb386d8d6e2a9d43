#pragma once
// What a loaded tokenizer is made of; built by the loader (tokenizer_loader.cpp), used by Tokenizer.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/string_map.h"

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

}  // namespace moe::tokenizer
