// UTF-8 handling: the lossy replacement follows "maximal subparts" (the expected strings are what
// Python's bytes.decode("utf-8", "replace") and Rust's from_utf8_lossy give), and encode survives
// any byte string.
#include <gtest/gtest.h>

#include <random>

#include "common/utf8.h"
#include "qwen3_fixture.h"

namespace moe::tokenizer::testing {
namespace {

const std::string kFFFD = "\xEF\xBF\xBD";

std::string lossy(std::string_view bytes) {
  std::string out;
  append_utf8_lossy(bytes, out);
  return out;
}

TEST(Utf8, LossyReplacesMaximalSubparts) {
  EXPECT_EQ(lossy("plain ascii"), "plain ascii");
  EXPECT_EQ(lossy("\xE2\x82\xAC"), "\xE2\x82\xAC");              // € stays
  EXPECT_EQ(lossy("\xE2\x82" "A"), kFFFD + "A");                 // truncated 3-byte sequence: one U+FFFD
  EXPECT_EQ(lossy("\xF0\x9F\x98"), kFFFD);                       // truncated at the end
  EXPECT_EQ(lossy("\xC0\xAF"), kFFFD + kFFFD);                   // overlong: each byte
  EXPECT_EQ(lossy("\xED\xA0\x80"), kFFFD + kFFFD + kFFFD);       // a surrogate
  EXPECT_EQ(lossy("\xF4\x90\x80\x80"), kFFFD + kFFFD + kFFFD + kFFFD);  // past U+10FFFF
  EXPECT_EQ(lossy("\xFF" "a\x80"), kFFFD + "a" + kFFFD);
  EXPECT_EQ(lossy("\xE0\x80\x80"), kFFFD + kFFFD + kFFFD);
  EXPECT_EQ(lossy("\xF1\x80\x80" "\xE1\x80" "\xC2"), kFFFD + kFFFD + kFFFD);
}

TEST(Utf8, CompletePrefixHoldsBackOnlyAnUnfinishedEnd) {
  std::string out;
  EXPECT_EQ(append_complete_utf8_lossy("ab\xE4\xBD", out), 2u);
  EXPECT_EQ(out, "ab");
  out.clear();
  EXPECT_EQ(append_complete_utf8_lossy("\xE4" "b", out), 2u);  // cannot be finished any more
  EXPECT_EQ(out, kFFFD + "b");
}

TEST(Utf8, InvalidInputIsEncodedAsTheReplacementCharacter) {
  const Tokenizer& tok = qwen3_tokenizer();
  EXPECT_EQ(tok.encode("ok \xFF\xFE then \xE2\x82"), tok.encode("ok " + kFFFD + kFFFD + " then " + kFFFD));
  EXPECT_EQ(tok.decode(tok.encode("a\xC0\xAF" "b")), "a" + kFFFD + kFFFD + "b");
}

TEST(Utf8, RandomBytesNeverBreakTheEncoder) {
  const Tokenizer& tok = qwen3_tokenizer();
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> byte(0, 255), length(0, 64);
  for (int i = 0; i < 1000; ++i) {
    std::string bytes(length(rng), '\0');
    for (char& c : bytes) c = static_cast<char>(byte(rng));
    const std::vector<int32_t> ids = tok.encode(bytes);
    const std::string text = tok.decode(ids);
    EXPECT_TRUE(is_valid_utf8(text));
    // Only normalization may change the repaired text: it must re-encode to the same ids.
    EXPECT_EQ(tok.encode(text), ids);
  }
}

}  // namespace
}  // namespace moe::tokenizer::testing
