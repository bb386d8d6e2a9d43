// Property: for valid UTF-8, decode(encode(s)) is the NFC form of s (the Qwen3 normalizer), on a
// few thousand seeded random strings of mixed scripts, emoji, marks and control characters.
#include <gtest/gtest.h>
#include <utf8proc.h>

#include <cstdlib>

#include "qwen3_fixture.h"
#include "random_text.h"

namespace moe::tokenizer::testing {
namespace {

std::string nfc(const std::string& text) {
  utf8proc_uint8_t* out = nullptr;
  const auto length = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                                   static_cast<utf8proc_ssize_t>(text.size()), &out,
                                   static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  EXPECT_GE(length, 0);
  std::string result(reinterpret_cast<const char*>(out), length < 0 ? 0 : static_cast<size_t>(length));
  std::free(out);
  return result;
}

TEST(RoundTrip, DecodeOfEncodeIsNfcOfTheText) {
  const Tokenizer& tok = qwen3_tokenizer();
  RandomText random(1234);
  for (int i = 0; i < 3000; ++i) {
    const std::string text = random.next();
    ASSERT_TRUE(is_valid_utf8(text));
    EXPECT_EQ(tok.decode(tok.encode(text)), nfc(text)) << "case " << i;
    EXPECT_EQ(tok.decode(tok.encode(text, /*parse_special=*/false)), nfc(text)) << "case " << i;
  }
}

TEST(RoundTrip, CombiningMarksAreComposed) {
  const Tokenizer& tok = qwen3_tokenizer();
  // "e" + U+0301 is NFC "é": both spellings give the same ids.
  EXPECT_EQ(tok.encode("caf" "e\xCC\x81"), tok.encode("caf\xC3\xA9"));
}

TEST(RoundTrip, LongRunsOfOneCharacter) {
  const Tokenizer& tok = qwen3_tokenizer();
  for (const std::string unit : {" ", "\n", "a", "\xE4\xBD\xA0", "!", "1"}) {
    std::string text;
    for (int i = 0; i < 20000; ++i) text += unit;
    EXPECT_EQ(tok.decode(tok.encode(text)), text) << "unit '" << unit << "'";
  }
}

}  // namespace
}  // namespace moe::tokenizer::testing
