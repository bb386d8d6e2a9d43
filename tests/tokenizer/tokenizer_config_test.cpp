// tokenizer_config.json reading (both spellings of tokens and of chat_template) and the choice of
// end-of-sequence ids (generation_config.json first, then the tokenizer config's eos_token).
#include <gtest/gtest.h>

#include "common/error.h"
#include "qwen3_fixture.h"
#include "synthetic_tokenizer.h"
#include "tokenizer/tokenizer_config.h"

namespace moe::tokenizer::testing {
namespace {

TEST(TokenizerConfig, ReadsTheQwen3Fixture) {
  const TokenizerConfig config = load_tokenizer_config(qwen3_dir());
  EXPECT_EQ(config.eos_token, "<|im_end|>");
  EXPECT_EQ(config.pad_token, "<|endoftext|>");
  EXPECT_EQ(config.bos_token, "");  // null in the file
  EXPECT_FALSE(config.add_bos_token);
  EXPECT_NE(config.chat_template.find("<|im_start|>"), std::string::npos);
}

TEST(TokenizerConfig, TokensMayBeAddedTokenObjectsAndTemplatesNamed) {
  TempDir dir;
  dir.write("tokenizer_config.json", R"({
    "bos_token": {"content": "<s>", "lstrip": false, "special": true},
    "eos_token": "</s>", "add_bos_token": true,
    "chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]})");
  const TokenizerConfig config = load_tokenizer_config(dir.path());
  EXPECT_EQ(config.bos_token, "<s>");
  EXPECT_EQ(config.eos_token, "</s>");
  EXPECT_EQ(config.pad_token, "");
  EXPECT_TRUE(config.add_bos_token);
  EXPECT_EQ(config.chat_template, "D");
}

TEST(TokenizerConfig, TemplateMayLiveInChatTemplateJinja) {
  TempDir dir;
  dir.write("tokenizer_config.json", R"({"eos_token": "</s>"})");
  dir.write("chat_template.jinja", "{{ messages }}");
  EXPECT_EQ(load_tokenizer_config(dir.path()).chat_template, "{{ messages }}");
}

TEST(TokenizerConfig, BadOrMissingFilesAreErrors) {
  TempDir dir;
  EXPECT_THROW(load_tokenizer_config(dir.path()), Error);
  dir.write("tokenizer_config.json", R"({"eos_token": 5})");
  EXPECT_THROW(load_tokenizer_config(dir.path()), Error);
}

TEST(EosTokenIds, GenerationConfigComesFirst) {
  const Tokenizer& tok = qwen3_tokenizer();
  const TokenizerConfig config = load_tokenizer_config(qwen3_dir());
  const std::string model_dir = std::string(MOE_TEST_DATA_DIR) + "/qwen3-moe-tiny";
  EXPECT_EQ(resolve_eos_token_ids(model_dir, config, tok), (std::vector<int32_t>{151645, 151643}));
  TempDir dir;
  dir.write("generation_config.json", R"({"eos_token_id": 151643})");
  EXPECT_EQ(resolve_eos_token_ids(dir.path(), config, tok), (std::vector<int32_t>{151643}));
}

// A model without generation_config.json (the id-only fixtures) stops at config.json's eos_token_id.
TEST(EosTokenIds, ConfigJsonComesSecond) {
  TempDir dir;
  dir.write("config.json", R"({"eos_token_id": [7, 9]})");
  EXPECT_EQ(resolve_eos_token_ids(dir.path(), TokenizerConfig{}, qwen3_tokenizer()), (std::vector<int32_t>{7, 9}));
  dir.write("generation_config.json", R"({"eos_token_id": 3})");
  EXPECT_EQ(resolve_eos_token_ids(dir.path(), TokenizerConfig{}, qwen3_tokenizer()), (std::vector<int32_t>{3}));
}

TEST(EosTokenIds, FallsBackToTheTokenizerConfig) {
  const Tokenizer& tok = qwen3_tokenizer();
  TokenizerConfig config = load_tokenizer_config(qwen3_dir());
  EXPECT_EQ(resolve_eos_token_ids(qwen3_dir(), config, tok), (std::vector<int32_t>{151645}));
  config.eos_token = "<not-a-token>";
  EXPECT_THROW(resolve_eos_token_ids(qwen3_dir(), config, tok), Error);
  config.eos_token = "";
  EXPECT_THROW(resolve_eos_token_ids(qwen3_dir(), config, tok), Error);
}

}  // namespace
}  // namespace moe::tokenizer::testing
