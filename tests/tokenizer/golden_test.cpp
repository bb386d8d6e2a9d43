// Exactness against Hugging Face tokenizers: every golden encoding and decoding of the fixture,
// and the ids of every rendered chat template.
#include <gtest/gtest.h>

#include "common/error.h"
#include "qwen3_fixture.h"

namespace moe::tokenizer::testing {
namespace {

using Ids = std::vector<int32_t>;

TEST(QwenGolden, EncodeMatchesHuggingFace) {
  const auto& cases = qwen3_golden().at("encode");
  ASSERT_GE(cases.size(), 10u);
  for (const auto& c : cases) {
    const std::string text = c.at("text");
    EXPECT_EQ(qwen3_tokenizer().encode(text), c.at("ids").get<Ids>()) << "text: " << text;
  }
}

TEST(QwenGolden, DecodeMatchesHuggingFace) {
  for (const auto& c : qwen3_golden().at("encode")) {
    const Ids ids = c.at("ids");
    EXPECT_EQ(qwen3_tokenizer().decode(ids), c.at("decoded").get<std::string>());
    EXPECT_EQ(qwen3_tokenizer().decode(ids, /*skip_special=*/true), c.at("decoded_skip_special").get<std::string>());
  }
}

TEST(QwenGolden, RenderedChatTemplatesEncodeToTheirIds) {
  const auto& cases = qwen3_golden().at("chat_template");
  ASSERT_GE(cases.size(), 1u);
  for (const auto& c : cases) {
    const std::string rendered = c.at("rendered");
    EXPECT_EQ(qwen3_tokenizer().encode(rendered), c.at("ids").get<Ids>()) << "rendered: " << rendered;
    EXPECT_EQ(qwen3_tokenizer().decode(c.at("ids").get<Ids>()), rendered);
  }
}

TEST(QwenGolden, SplitSpecialTokensTreatsThemAsText) {
  const Tokenizer& tok = qwen3_tokenizer();
  const Ids parsed = tok.encode("<|im_start|>user");
  ASSERT_EQ(parsed.front(), *tok.token_to_id("<|im_start|>"));
  const Ids plain = tok.encode("<|im_start|>user", /*parse_special=*/false);
  EXPECT_GT(plain.size(), parsed.size());
  for (int32_t id : plain) EXPECT_FALSE(tok.is_special(id));
  EXPECT_EQ(tok.decode(plain), "<|im_start|>user");
  // Non-special added tokens such as <think> are still recognised.
  EXPECT_EQ(tok.encode("<think>", false), Ids{*tok.token_to_id("<think>")});
}

TEST(QwenGolden, VocabularyLookups) {
  const Tokenizer& tok = qwen3_tokenizer();
  EXPECT_EQ(tok.vocab_size(), 151669);
  EXPECT_EQ(tok.token_to_id("<|im_end|>"), 151645);
  EXPECT_EQ(tok.token_to_id("Hello"), 9707);
  EXPECT_EQ(tok.token_to_id("not-a-token-anywhere"), std::nullopt);
  EXPECT_EQ(tok.id_to_token(220), "Ġ");
  EXPECT_EQ(tok.token_bytes(220), " ");
  EXPECT_EQ(tok.token_bytes(151645), "<|im_end|>");
  EXPECT_TRUE(tok.is_special(151645));
  EXPECT_FALSE(tok.is_special(151667));  // <think>
  EXPECT_FALSE(tok.is_special(9707));
}

// Like tokenizers: ids past the vocabulary (the model's padded embedding rows) decode to nothing;
// a negative id cannot exist there and is an error naming it.
TEST(QwenGolden, UnknownIdsDecodeToNothingAndNegativeIdsAreErrors) {
  const Tokenizer& tok = qwen3_tokenizer();
  for (int32_t unknown : {151669, 151935, 1 << 30}) {
    EXPECT_FALSE(tok.knows(unknown));
    EXPECT_EQ(tok.decode({9707, unknown, 11}), "Hello,");
  }
  EXPECT_TRUE(tok.knows(9707));
  try {
    tok.decode({9707, -1});
    FAIL() << "decode accepted id -1";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("token id -1"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace moe::tokenizer::testing
