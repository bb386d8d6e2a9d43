// Streaming detokenization: pushed one id at a time, the emitted pieces are whole UTF-8 and add up
// to the full decode, after every prefix of the stream and with or without special tokens.
#include <gtest/gtest.h>

#include <random>

#include "common/error.h"
#include "common/utf8.h"
#include "qwen3_fixture.h"
#include "random_text.h"
#include "tokenizer/streaming.h"

namespace moe::tokenizer::testing {
namespace {

// Streams `ids` and checks, after every id, that text emitted so far plus what finish() would add
// equals decode of the prefix, and that every emitted piece is valid UTF-8.
void expect_stream_matches_decode(const Tokenizer& tok, const std::vector<int32_t>& ids, bool skip_special) {
  IncrementalDetokenizer stream(tok, skip_special);
  std::string emitted;
  for (size_t n = 0; n < ids.size(); ++n) {
    const std::string piece = stream.push(ids[n]);
    ASSERT_TRUE(is_valid_utf8(piece));
    emitted += piece;
    IncrementalDetokenizer ended = stream;
    const std::vector<int32_t> prefix(ids.begin(), ids.begin() + n + 1);
    ASSERT_EQ(emitted + ended.finish(), tok.decode(prefix, skip_special)) << "after " << n + 1 << " ids";
  }
  EXPECT_EQ(emitted + stream.finish(), tok.decode(ids, skip_special));
}

TEST(IncrementalDetokenizer, HoldsBackASplitCharacter) {
  const Tokenizer& tok = qwen3_tokenizer();
  // The golden encoding of "emoji 👍🏽🚀 ..." spells 👍 with two byte-level tokens (61804, 235).
  IncrementalDetokenizer stream(tok, false);
  EXPECT_EQ(stream.push(37523), "emoji");
  EXPECT_EQ(stream.push(61804), " ");
  IncrementalDetokenizer ended_mid_character = stream;
  EXPECT_FALSE(ended_mid_character.finish().empty());  // the held-back bytes, as U+FFFD
  EXPECT_EQ(stream.push(235), "\xF0\x9F\x91\x8D");
  IncrementalDetokenizer ended_after_it = stream;
  EXPECT_EQ(ended_after_it.finish(), "");  // nothing held back any more
}

TEST(IncrementalDetokenizer, SkipsSpecialTokensLikeDecode) {
  const Tokenizer& tok = qwen3_tokenizer();
  const std::vector<int32_t> ids = tok.encode("<|im_start|>user\nhi<|im_end|>");
  expect_stream_matches_decode(tok, ids, true);
  expect_stream_matches_decode(tok, ids, false);
}

TEST(IncrementalDetokenizer, MatchesDecodeOnEncodedRandomText) {
  const Tokenizer& tok = qwen3_tokenizer();
  RandomText random(99);
  for (int i = 0; i < 300; ++i) {
    const std::vector<int32_t> ids = tok.encode(random.next());
    expect_stream_matches_decode(tok, ids, i % 2 == 0);
  }
}

TEST(IncrementalDetokenizer, MatchesDecodeOnRandomIdsWithBrokenUtf8) {
  // Random ids include many lone fragments of multi-byte characters: decode repairs them with
  // U+FFFD, and the stream must repair them identically.
  const Tokenizer& tok = qwen3_tokenizer();
  std::mt19937 rng(5);
  std::uniform_int_distribution<int32_t> any_id(0, tok.vocab_size() - 1);
  for (int i = 0; i < 200; ++i) {
    std::vector<int32_t> ids(12);
    for (int32_t& id : ids) id = any_id(rng);
    expect_stream_matches_decode(tok, ids, i % 2 == 0);
  }
}

TEST(IncrementalDetokenizer, UnknownIdsAddNothingNegativeIdsAreErrors) {
  IncrementalDetokenizer stream(qwen3_tokenizer(), false);
  EXPECT_EQ(stream.push(9707), "Hello");
  EXPECT_EQ(stream.push(qwen3_tokenizer().vocab_size()), "");
  EXPECT_EQ(stream.push(151935), "");
  EXPECT_EQ(stream.push(11), ",");
  EXPECT_THROW(stream.push(-1), Error);
}

}  // namespace
}  // namespace moe::tokenizer::testing
