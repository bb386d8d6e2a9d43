#pragma once
// tokenizer_config.json (chat template, named special tokens) and the end-of-sequence ids a model
// stops on, read from a tokenizer or model directory as published on the Hugging Face hub.
#include <cstdint>
#include <string>
#include <vector>

namespace moe::tokenizer {

class Tokenizer;

// The parts of tokenizer_config.json the engine uses; absent fields stay empty / false.
struct TokenizerConfig {
  std::string chat_template;
  std::string bos_token, eos_token, pad_token;
  bool add_bos_token = false;
};

// Reads DIR/tokenizer_config.json (DIR may be a model directory holding the tokenizer files).
// Token fields may be a string or an AddedToken object {"content": ...}; chat_template may be a
// string or a list of {name, template} (the "default" one is taken). Throws moe::Error naming the
// file when it is missing or malformed.
TokenizerConfig load_tokenizer_config(const std::string& dir);

// The ids generation stops on: generation_config.json's eos_token_id (int or list) in model_dir when
// present, else config.json's (as transformers' generation defaults), else the id of config.eos_token
// in the tokenizer. Throws moe::Error when neither names one.
std::vector<int32_t> resolve_eos_token_ids(const std::string& model_dir, const TokenizerConfig& config,
                                           const Tokenizer& tokenizer);

}  // namespace moe::tokenizer
