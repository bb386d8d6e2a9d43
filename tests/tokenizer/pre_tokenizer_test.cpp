// Pre-tokenization: the five Split behaviors and invert (tokenizers' documented example), literal
// patterns, and ByteLevel's prefix space and GPT-2 word regex.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "tokenizer/pre_tokenizer.h"

namespace moe::tokenizer::testing {
namespace {

using Words = std::vector<std::string>;

Words split_words(const std::string& text, const std::string& pattern, SplitBehavior behavior, bool invert = false) {
  Words words;
  for (const ByteRange& piece : split_pieces(text.size(), UnicodeRegex(pattern).find_all(text), behavior, invert))
    words.push_back(text.substr(piece.first, piece.second - piece.first));
  return words;
}

TEST(SplitBehavior, TokenizersDocumentedExample) {
  const std::string text = "the-final--countdown";
  EXPECT_EQ(split_words(text, "-", SplitBehavior::Removed), (Words{"the", "final", "countdown"}));
  EXPECT_EQ(split_words(text, "-", SplitBehavior::Isolated), (Words{"the", "-", "final", "-", "-", "countdown"}));
  EXPECT_EQ(split_words(text, "-", SplitBehavior::MergedWithPrevious), (Words{"the-", "final-", "-", "countdown"}));
  EXPECT_EQ(split_words(text, "-", SplitBehavior::MergedWithNext), (Words{"the", "-final", "-", "-countdown"}));
  EXPECT_EQ(split_words(text, "-", SplitBehavior::Contiguous), (Words{"the", "-", "final", "--", "countdown"}));
}

TEST(SplitBehavior, InvertMakesThePatternThePieces) {
  EXPECT_EQ(split_words("ab12cd3", "\\p{L}+", SplitBehavior::Removed, true), (Words{"ab", "cd"}));
  EXPECT_EQ(split_words("ab12", "\\p{N}", SplitBehavior::Contiguous, true), (Words{"ab", "12"}));
}

TEST(UnicodeRegex, LookAheadAndUnicodePropertiesWork) {
  // Qwen's "\s+(?!\S)" leaves the last space of a run to the next word.
  EXPECT_EQ(split_words("a   b", "\\s+(?!\\S)|\\s+", SplitBehavior::Isolated), (Words{"a", "  ", " ", "b"}));
  EXPECT_EQ(split_words("日本語abc", "\\p{Han}+", SplitBehavior::Isolated), (Words{"日本語", "abc"}));
  EXPECT_THROW(UnicodeRegex("(unclosed"), Error);
}

TEST(UnicodeRegex, EmptyMatchesSplitBetweenCharacters) {
  EXPECT_EQ(split_words("aé", "", SplitBehavior::Isolated), (Words{"a", "é"}));
}

Words pre_tokenize(const nlohmann::json& spec, const std::string& text) {
  Words words;
  PreTokenizer::from_json(spec, "test").split(text, words);
  return words;
}

TEST(PreTokenizer, ByteLevelWithGpt2RegexAndPrefixSpace) {
  const nlohmann::json gpt2 = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", true}};
  EXPECT_EQ(pre_tokenize(gpt2, "Hello world's  end\n"),
            (Words{"ĠHello", "Ġworld", "'s", "Ġ", "Ġend", "Ċ"}));
  const nlohmann::json plain = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}};
  EXPECT_EQ(pre_tokenize(plain, "a b\xC3\xA9"), (Words{"aĠbÃ©"}));
}

TEST(PreTokenizer, SequenceOfLiteralSplitThenByteLevel) {
  const nlohmann::json spec = {
      {"type", "Sequence"},
      {"pretokenizers",
       {{{"type", "Split"}, {"pattern", {{"String", "."}}}, {"behavior", "MergedWithPrevious"}, {"invert", false}},
        {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}};
  // The literal "." must not act as the regex wildcard.
  EXPECT_EQ(pre_tokenize(spec, "a.b c."), (Words{"a.", "bĠc."}));
}

}  // namespace
}  // namespace moe::tokenizer::testing
