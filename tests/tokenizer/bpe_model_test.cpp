// The BPE merge loop: merges apply lowest rank first, both file spellings of merges are read, and
// ignore_merges takes whole-word vocabulary entries as they are.
#include <gtest/gtest.h>

#include "synthetic_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace moe::tokenizer::testing {
namespace {

using Ids = std::vector<int32_t>;

Tokenizer load(const nlohmann::json& file) {
  TempDir dir;
  return Tokenizer::load(dir.write("tokenizer.json", file.dump()));
}

TEST(BpeModel, LowestRankMergesFirst) {
  // "abc": (b, c) outranks (a, b), so the word becomes a + bc, then abc only through (a, bc).
  const std::vector<std::string> extra = {"ab", "bc", "abc"};
  EXPECT_EQ(load(byte_level_tokenizer_json(extra, {"b c", "a b", "a bc"})).encode("abc"), (Ids{258}));
  EXPECT_EQ(load(byte_level_tokenizer_json(extra, {"b c", "a b", "ab c"})).encode("abc"), (Ids{'a', 257}));
  EXPECT_EQ(load(byte_level_tokenizer_json(extra, {"a b", "b c", "ab c"})).encode("abc"), (Ids{258}));
}

TEST(BpeModel, EqualRanksMergeLeftmostFirst) {
  EXPECT_EQ(load(byte_level_tokenizer_json({"aa"}, {"a a"})).encode("aaaaa"), (Ids{256, 256, 'a'}));
}

TEST(BpeModel, MergesMayBeWrittenAsPairs) {
  const nlohmann::json pairs = nlohmann::json::array({nlohmann::json::array({"a", "b"}), nlohmann::json::array({"ab", "c"})});
  EXPECT_EQ(load(byte_level_tokenizer_json({"ab", "abc"}, pairs)).encode("abcab"), (Ids{257, 256}));
}

TEST(BpeModel, WordsAreCachedWithoutChangingResults) {
  const Tokenizer tok = load(byte_level_tokenizer_json({"ab"}, {"a b"}));
  for (int round = 0; round < 3; ++round) EXPECT_EQ(tok.encode("abab"), (Ids{256, 256}));
}

TEST(BpeModel, IgnoreMergesTakesWholeWordsFromTheVocabulary) {
  nlohmann::json file = byte_level_tokenizer_json({"xyz"});
  EXPECT_EQ(load(file).encode("xyz"), (Ids{'x', 'y', 'z'}));
  file["model"]["ignore_merges"] = true;
  EXPECT_EQ(load(file).encode("xyz"), (Ids{256}));
}

TEST(BpeModel, DecodeSpellsBytesBack) {
  const Tokenizer tok = load(byte_level_tokenizer_json({"ĠĊ"}, {"Ġ Ċ"}));
  EXPECT_EQ(tok.encode(" \n"), (Ids{256}));
  EXPECT_EQ(tok.decode({256, 'x'}), " \nx");
}

}  // namespace
}  // namespace moe::tokenizer::testing
