#pragma once
// The real Qwen3 tokenizer of tests/data and its golden data from Hugging Face tokenizers, loaded
// once per test binary (parsing the 11 MB tokenizer.json takes a moment).
#include <nlohmann/json.hpp>
#include <string>

#include "common/json_file.h"
#include "tokenizer/tokenizer.h"

namespace moe::tokenizer::testing {

inline std::string qwen3_dir() { return std::string(MOE_TEST_DATA_DIR) + "/qwen3-tokenizer"; }

inline const Tokenizer& qwen3_tokenizer() {
  static const Tokenizer tokenizer = Tokenizer::load(qwen3_dir());
  return tokenizer;
}

inline const nlohmann::json& qwen3_golden() {
  static const nlohmann::json golden = read_json_file(qwen3_dir() + "/golden.json");
  return golden;
}

}  // namespace moe::tokenizer::testing
