// Added tokens: leftmost-longest matching, and the special / lstrip / rstrip / single_word /
// normalized flags, on a byte vocabulary where plain text encodes to its own bytes.
#include <gtest/gtest.h>

#include "synthetic_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace moe::tokenizer::testing {
namespace {

using Ids = std::vector<int32_t>;

Tokenizer tokenizer_with(const nlohmann::json& added_tokens, const nlohmann::json& normalizer = nullptr) {
  nlohmann::json file = byte_level_tokenizer_json();
  file["added_tokens"] = added_tokens;
  file["normalizer"] = normalizer;
  TempDir dir;
  return Tokenizer::load(dir.write("tokenizer.json", file.dump()));
}

TEST(AddedTokens, LeftmostThenLongestMatchWins) {
  const Tokenizer tok = tokenizer_with({added_token(256, "ab", true), added_token(257, "abc", true),
                                        added_token(258, "bcd", true)});
  EXPECT_EQ(tok.encode("xabcd"), (Ids{'x', 257, 'd'}));
  EXPECT_EQ(tok.encode("xbcd ab"), (Ids{'x', 258, ' ', 256}));
}

TEST(AddedTokens, SpecialTokensAreTextWhenNotParsed) {
  const Tokenizer tok = tokenizer_with({added_token(256, "<s>", true), added_token(257, "<t>", false)});
  EXPECT_EQ(tok.encode("a<s><t>"), (Ids{'a', 256, 257}));
  EXPECT_EQ(tok.encode("a<s><t>", /*parse_special=*/false), (Ids{'a', '<', 's', '>', 257}));
  EXPECT_EQ(tok.decode({'a', 256, 257}), "a<s><t>");
  EXPECT_EQ(tok.decode({'a', 256, 257}, /*skip_special=*/true), "a<t>");
}

TEST(AddedTokens, LstripAndRstripSwallowNeighbouringWhitespace) {
  const Tokenizer tok = tokenizer_with({added_token(256, "<l>", true, {"lstrip"}), added_token(257, "<r>", true, {"rstrip"})});
  EXPECT_EQ(tok.encode("a \t<l> b"), (Ids{'a', 256, ' ', 'b'}));
  EXPECT_EQ(tok.encode("a <r> \n b"), (Ids{'a', ' ', 257, 'b'}));
  // Unicode whitespace counts too (U+2560 ideographic space).
  EXPECT_EQ(tok.encode("a\xE3\x80\x80<l>"), (Ids{'a', 256}));
}

TEST(AddedTokens, SingleWordMatchesOnlyWholeWords) {
  const Tokenizer tok = tokenizer_with({added_token(256, "cat", false, {"single_word"}), added_token(257, "at", false)});
  EXPECT_EQ(tok.encode("cat"), (Ids{256}));
  EXPECT_EQ(tok.encode("a cat."), (Ids{'a', ' ', 256, '.'}));
  // Inside a word the match is dropped, and tokenizers does not retry the shorter "at" inside it.
  EXPECT_EQ(tok.encode("cats"), (Ids{'c', 'a', 't', 's'}));
  EXPECT_EQ(tok.encode("_cat"), (Ids{'_', 'c', 'a', 't'}));
  EXPECT_EQ(tok.encode("\xC3\xA9" "cat"), (Ids{0xC3, 0xA9, 'c', 'a', 't'}));  // é is a letter
  EXPECT_EQ(tok.encode("bat"), (Ids{'b', 257}));
}

TEST(AddedTokens, NormalizedTokensMatchTheNormalizedText) {
  const nlohmann::json nfc = {{"type", "NFC"}};
  // "xé" written decomposed (e + U+0301) in the text is composed by NFC before matching.
  const Tokenizer tok = tokenizer_with(nlohmann::json::array({added_token(256, "x\xC3\xA9", false, {"normalized"})}), nfc);
  EXPECT_EQ(tok.encode("xe\xCC\x81!"), (Ids{256, '!'}));
  // A token matched in raw text is not: the decomposed form stays text and is then composed.
  const Tokenizer raw = tokenizer_with(nlohmann::json::array({added_token(256, "x\xC3\xA9", false)}), nfc);
  EXPECT_EQ(raw.encode("xe\xCC\x81!"), (Ids{'x', 0xC3, 0xA9, '!'}));
  EXPECT_EQ(raw.encode("x\xC3\xA9!"), (Ids{256, '!'}));
}

TEST(AddedTokens, IdsAreAssignedAsTokenizersDoes) {
  // tokenizers ignores the file's ids: a content already in the vocabulary keeps its id ("Ġ" is
  // byte 32), a new one takes the next id past the vocabulary and earlier added tokens.
  const Tokenizer tok = tokenizer_with({added_token(999, "<a>", true), added_token(5, "\xC4\xA0", true),
                                        added_token(7, "<b>", false), added_token(8, "<a>", false)});
  EXPECT_EQ(tok.token_to_id("<a>"), 256);
  EXPECT_EQ(tok.token_to_id("\xC4\xA0"), 32);
  EXPECT_EQ(tok.token_to_id("<b>"), 257);
  EXPECT_EQ(tok.vocab_size(), 258);
  // The repeated "<a>" keeps id 256 and takes the later flags (not special).
  EXPECT_FALSE(tok.is_special(256));
  EXPECT_TRUE(tok.is_special(32));
  EXPECT_EQ(tok.decode({'x', 32, 256}, /*skip_special=*/true), "x<a>");
}

}  // namespace
}  // namespace moe::tokenizer::testing
