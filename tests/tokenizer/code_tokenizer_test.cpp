// The project's own trained tokenizer (tests/data/code-moe, made by bench/tools/train_code_model.py with
// Hugging Face tokenizers) encodes and decodes code exactly as transformers does, and its encodings of
// the code model's golden prompts are the ids those goldens were made from.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/json_file.h"
#include "tokenizer/tokenizer.h"

namespace moe::tokenizer::testing {
namespace {

using Ids = std::vector<int32_t>;

const std::string kDir = std::string(MOE_TEST_DATA_DIR) + "/code-moe";

const Tokenizer& code_tokenizer() {
  static const Tokenizer tokenizer = Tokenizer::load(kDir);
  return tokenizer;
}

TEST(CodeTokenizer, EncodeAndDecodeMatchTransformers) {
  const nlohmann::json golden = read_json_file(kDir + "/tokenizer_golden.json");
  const auto& cases = golden.at("encode");
  ASSERT_GE(cases.size(), 5u);
  for (const auto& c : cases) {
    const std::string text = c.at("text");
    const Ids ids = c.at("ids");
    EXPECT_EQ(code_tokenizer().encode(text), ids) << "text: " << text;
    EXPECT_EQ(code_tokenizer().decode(ids), c.at("decoded").get<std::string>());
    EXPECT_EQ(code_tokenizer().decode(ids, /*skip_special=*/true), c.at("decoded_skip_special").get<std::string>());
  }
}

TEST(CodeTokenizer, GoldenPromptsEncodeToTheGoldensIds) {
  const nlohmann::json golden = read_json_file(kDir + "/golden.json");
  ASSERT_GE(golden.at("cases").size(), 1u);
  for (const auto& c : golden.at("cases")) {
    const std::string prompt = c.at("prompt");
    EXPECT_EQ(code_tokenizer().encode(prompt), c.at("prompt_ids").get<Ids>()) << "prompt: " << prompt;
  }
}

TEST(CodeTokenizer, VocabularyAndEndOfText) {
  const Tokenizer& tok = code_tokenizer();
  EXPECT_EQ(tok.vocab_size(), 4096);
  EXPECT_EQ(tok.token_to_id("<|endoftext|>"), 4095);
  EXPECT_TRUE(tok.is_special(4095));
  EXPECT_EQ(tok.encode("x<|endoftext|>").back(), 4095);
}

}  // namespace
}  // namespace moe::tokenizer::testing
