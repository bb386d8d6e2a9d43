// Stop strings in a stream: found across token and chunk boundaries, the text is cut where the stop
// begins, and text that may start a stop is held back until it is known not to.
#include <gtest/gtest.h>

#include "qwen3_fixture.h"
#include "tokenizer/streaming.h"

namespace moe::tokenizer::testing {
namespace {

// Feeds `chunks` in order; returns everything emitted and the scan that stopped (if any).
std::pair<std::string, StopScan> run(StopStringMatcher& matcher, const std::vector<std::string>& chunks) {
  std::string emitted;
  for (const std::string& chunk : chunks) {
    StopScan scan = matcher.feed(chunk);
    emitted += scan.text;
    if (scan.stopped) return {emitted, scan};
  }
  emitted += matcher.finish();
  return {emitted, StopScan{}};
}

TEST(StopStringMatcher, HoldsBackAPossibleStopAndCutsAtIt) {
  StopStringMatcher matcher({"</answer>"});
  EXPECT_EQ(matcher.feed("The answer is 42<").text, "The answer is 42");
  EXPECT_EQ(matcher.feed("/ans").text, "");
  const StopScan scan = matcher.feed("wer> and more");
  EXPECT_TRUE(scan.stopped);
  EXPECT_EQ(scan.text, "");
  EXPECT_EQ(scan.stop_offset, 16u);
  EXPECT_TRUE(matcher.stopped());
  EXPECT_EQ(matcher.feed("ignored").text, "");
}

TEST(StopStringMatcher, ReleasesHeldTextThatTurnsOutNotToBeAStop) {
  StopStringMatcher matcher({"STOP"});
  EXPECT_EQ(matcher.feed("ST").text, "");
  EXPECT_EQ(matcher.feed("ARS").text, "STAR");  // "S" may still begin "STOP"
  EXPECT_EQ(matcher.finish(), "S");
}

TEST(StopStringMatcher, FirstCompletedStopWinsWhateverTheChunking) {
  const std::string text = "abcde";
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    StopStringMatcher matcher({"cde", "bc"});
    const auto [emitted, scan] = run(matcher, {text.substr(0, cut), text.substr(cut)});
    EXPECT_TRUE(scan.stopped);
    EXPECT_EQ(scan.stop_index, 1u) << "cut at " << cut;
    EXPECT_EQ(emitted, "a");
  }
}

TEST(StopStringMatcher, CanKeepTheStopString) {
  StopStringMatcher matcher({"\n\n"}, /*include_stop_string=*/true);
  const auto [emitted, scan] = run(matcher, {"line\n", "\nnext"});
  EXPECT_TRUE(scan.stopped);
  EXPECT_EQ(emitted, "line\n\n");
  EXPECT_EQ(scan.stop_offset, 4u);
}

TEST(StopStringMatcher, FindsAStopStraddlingTokensOfARealStream) {
  const Tokenizer& tok = qwen3_tokenizer();
  const std::string reply = "Sure! The result: 👍🏽 done. Observation: ignored tail";
  const std::vector<int32_t> ids = tok.encode(reply);
  // "Observation:" spans several tokens, and "👍🏽 d" spans tokens that split a character.
  for (const std::string stop : {"Observation:", "\xF0\x9F\x8F\xBD d", "lt: "}) {
    IncrementalDetokenizer stream(tok, false);
    StopStringMatcher matcher({stop, "never-there"});
    std::string emitted;
    StopScan last;
    for (int32_t id : ids) {
      last = matcher.feed(stream.push(id));
      emitted += last.text;
      if (last.stopped) break;
    }
    ASSERT_TRUE(last.stopped) << stop;
    EXPECT_EQ(emitted, reply.substr(0, reply.find(stop)));
    EXPECT_EQ(last.stop_offset, reply.find(stop));
  }
}

TEST(StopStringMatcher, NoStopsPassesEverythingThrough) {
  StopStringMatcher matcher({"", ""});
  EXPECT_EQ(matcher.feed("anything <").text, "anything <");
  EXPECT_EQ(matcher.finish(), "");
}

}  // namespace
}  // namespace moe::tokenizer::testing
