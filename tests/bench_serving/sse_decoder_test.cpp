// The SSE framing moe-bench reads moe-serve's streams with: events whatever the read boundaries.
#include "serving/sse_decoder.h"

#include <gtest/gtest.h>

namespace moe::bench {
namespace {

using Events = std::vector<std::string>;

// What moe-serve's /generate sends for a two-chunk stream (api/response_builder.cpp's framing).
const std::string kStream =
    "data: {\"output_ids\":[5],\"meta_info\":{\"completion_tokens\":1}}\n\n"
    "data: {\"output_ids\":[5,9],\"meta_info\":{\"completion_tokens\":2}}\n\n"
    "data: [DONE]\n\n";
const Events kStreamEvents = {"{\"output_ids\":[5],\"meta_info\":{\"completion_tokens\":1}}",
                              "{\"output_ids\":[5,9],\"meta_info\":{\"completion_tokens\":2}}", "[DONE]"};

TEST(SseDecoder, WholeStreamInOneRead) {
  SseDecoder decoder;
  EXPECT_EQ(decoder.feed(kStream), kStreamEvents);
}

TEST(SseDecoder, EveryCutOfTheStreamGivesTheSameEvents) {
  for (size_t cut = 0; cut <= kStream.size(); ++cut) {
    SseDecoder decoder;
    Events events = decoder.feed(std::string_view(kStream).substr(0, cut));
    const Events rest = decoder.feed(std::string_view(kStream).substr(cut));
    events.insert(events.end(), rest.begin(), rest.end());
    EXPECT_EQ(events, kStreamEvents) << "cut at " << cut;
  }
}

TEST(SseDecoder, ByteByByteEmitsEachEventOnItsBlankLine) {
  SseDecoder decoder;
  Events events;
  for (size_t i = 0; i < kStream.size(); ++i) {
    const Events now = decoder.feed(std::string_view(kStream).substr(i, 1));
    // An event completes exactly on the second '\n' of its "\n\n".
    const bool ends_event = i > 0 && kStream[i] == '\n' && kStream[i - 1] == '\n';
    EXPECT_EQ(now.size(), ends_event ? 1u : 0u) << "byte " << i;
    events.insert(events.end(), now.begin(), now.end());
  }
  EXPECT_EQ(events, kStreamEvents);
}

TEST(SseDecoder, CrLfLineEndingsAndNoSpaceAfterTheColon) {
  SseDecoder decoder;
  EXPECT_EQ(decoder.feed("data:{\"a\":1}\r\n\r\ndata: [DONE]\r\n\r\n"), (Events{"{\"a\":1}", "[DONE]"}));
}

TEST(SseDecoder, DataLinesOfOneEventJoinWithNewlines) {
  SseDecoder decoder;
  EXPECT_EQ(decoder.feed("data: first\ndata:  second\ndata\n\n"), (Events{"first\n second\n"}));
}

TEST(SseDecoder, CommentsOtherFieldsAndEmptyEventsAreSkipped) {
  SseDecoder decoder;
  EXPECT_EQ(decoder.feed(": keep-alive\n\nevent: chunk\nid: 7\nretry: 10\n\n\n\ndata: x\nid: 8\n\n"), (Events{"x"}));
}

TEST(SseDecoder, AnEventWithoutItsBlankLineIsNotEmitted) {
  SseDecoder decoder;
  EXPECT_TRUE(decoder.feed("data: [DONE]\n").empty());
  EXPECT_EQ(decoder.feed("\n"), (Events{"[DONE]"}));
}

}  // namespace
}  // namespace moe::bench
