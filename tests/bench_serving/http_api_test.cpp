// What moe-bench sends over HTTP and how it reads the answers' events, error bodies and its URL.
#include "serving/http_api.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "serving/http_url.h"

namespace moe::bench {
namespace {

using nlohmann::json;

const BenchRequest kRequest{{3, 1, 4, 1, 5}, 4, true};

TEST(HttpApi, GenerateBodyIsSglangsStreamedGreedyRequest) {
  EXPECT_EQ(json::parse(request_body(HttpApi::Generate, kRequest)),
            json::parse(R"({"input_ids": [3, 1, 4, 1, 5], "stream": true, "return_routed_experts": true,
                            "sampling_params": {"max_new_tokens": 4, "ignore_eos": true, "temperature": 0}})"));
  EXPECT_EQ(api_path(HttpApi::Generate), "/generate");
}

// A rollout's requests sample (--temperature 1).
TEST(HttpApi, BodiesCarryTheTemperature) {
  BenchRequest sampled = kRequest;
  sampled.temperature = 1;
  EXPECT_EQ(json::parse(request_body(HttpApi::Generate, sampled))["sampling_params"]["temperature"], 1.0);
  EXPECT_EQ(json::parse(request_body(HttpApi::OpenAiCompletions, sampled))["temperature"], 1.0);
}

TEST(HttpApi, OpenAiBodyGivesThePromptAsIdsAndAsksForTokenLogprobs) {
  EXPECT_EQ(json::parse(request_body(HttpApi::OpenAiCompletions, {{7, 8}, 2, false})),
            json::parse(R"({"prompt": [7, 8], "max_tokens": 2, "ignore_eos": true, "temperature": 0,
                            "logprobs": 0, "stream": true, "return_routed_experts": false,
                            "stream_options": {"include_usage": true}})"));
  EXPECT_EQ(api_path(HttpApi::OpenAiCompletions), "/v1/completions");
}

TEST(HttpApi, ApiNames) {
  EXPECT_EQ(parse_http_api("generate"), HttpApi::Generate);
  EXPECT_EQ(parse_http_api("openai"), HttpApi::OpenAiCompletions);
  EXPECT_THROW(parse_http_api("chat"), Error);
}

TEST(StreamEventReader, GenerateCountsTokensFromTheCumulativeCompletionTokens) {
  StreamEventReader reader(HttpApi::Generate);
  std::vector<int> new_tokens;
  for (int total : {1, 2, 2, 5}) {
    const json event = {{"output_ids", json::array()}, {"meta_info", {{"completion_tokens", total}}}};
    const StreamUpdate update = reader.read(event.dump());
    EXPECT_EQ(update.error, "");
    new_tokens.push_back(update.new_tokens);
  }
  EXPECT_EQ(new_tokens, (std::vector<int>{1, 1, 0, 3}));
  EXPECT_FALSE(reader.done());
  const StreamUpdate done = reader.read("[DONE]");
  EXPECT_EQ(done.new_tokens, 0);
  EXPECT_EQ(done.error, "");
  EXPECT_TRUE(reader.done());
}

TEST(StreamEventReader, OpenAiCountsEachChunksTokenList) {
  StreamEventReader reader(HttpApi::OpenAiCompletions);
  const auto chunk = [](int tokens) {
    const json logprobs = {{"tokens", json::array_t(tokens, "token_id:1")}};
    return json{{"choices", {{{"index", 0}, {"text", "ab"}, {"logprobs", logprobs}}}}}.dump();
  };
  EXPECT_EQ(reader.read(chunk(1)).new_tokens, 1);
  EXPECT_EQ(reader.read(chunk(3)).new_tokens, 3);
  // The final usage agrees with the lists: nothing more.
  EXPECT_EQ(reader.read(R"({"choices":[],"usage":{"prompt_tokens":2,"completion_tokens":4}})").new_tokens, 0);
}

// llama.cpp's server streams a chunk of text per token and no token lists; a token whose text it
// held back (part of a UTF-8 character) shows only in the final usage.
TEST(StreamEventReader, OpenAiWithoutTokenListsCountsChunksOfTextAndTheUsageCorrects) {
  StreamEventReader reader(HttpApi::OpenAiCompletions);
  EXPECT_EQ(reader.read(R"({"choices":[{"index":0,"text":"He","logprobs":null}]})").new_tokens, 1);
  EXPECT_EQ(reader.read(R"({"choices":[{"index":0,"text":"llo"}]})").new_tokens, 1);
  EXPECT_EQ(reader.read(R"({"choices":[{"index":0,"text":"","finish_reason":"length"}]})").new_tokens, 0);
  const StreamUpdate usage = reader.read(R"({"choices":[{"text":""}],"usage":{"completion_tokens":3}})");
  EXPECT_EQ(usage.error, "");
  EXPECT_EQ(usage.new_tokens, 1);
  EXPECT_EQ(reader.read(R"({"object":"text_completion"})").error,
            R"(a chunk with neither choices nor usage: {"object":"text_completion"})");
}

TEST(StreamEventReader, ErrorEventsAndUnreadableEventsAreErrors) {
  StreamEventReader reader(HttpApi::Generate);
  EXPECT_EQ(reader.read(R"({"error": {"message": "prompt too long", "type": "invalid_request_error"}})").error,
            "prompt too long");
  EXPECT_EQ(reader.read(R"({"error": "plain"})").error, "\"plain\"");
  EXPECT_EQ(reader.read("{not json").error, "an event that is not a JSON object: {not json");
  EXPECT_EQ(reader.read(R"({"text": "no meta"})").error,
            R"(an event without meta_info.completion_tokens: {"text": "no meta"})");
}

TEST(HttpErrorMessage, TakesTheJsonErrorMessageOrTheBodysStart) {
  EXPECT_EQ(http_error_message(400, R"({"error": {"message": "`temperature` must be >= 0", "code": 400}})"),
            "HTTP 400: `temperature` must be >= 0");
  EXPECT_EQ(http_error_message(502, "Bad Gateway"), "HTTP 502: Bad Gateway");
  EXPECT_EQ(http_error_message(500, std::string(1000, 'x')), "HTTP 500: " + std::string(200, 'x'));
}

TEST(HttpUrl, HostPortAndPrefix) {
  const HttpUrl url = parse_http_url("http://127.0.0.1:30000");
  EXPECT_EQ(url.host, "127.0.0.1");
  EXPECT_EQ(url.port, "30000");
  EXPECT_EQ(url.base_path, "");
  const HttpUrl prefixed = parse_http_url("http://gpu-7/moe/v2/");
  EXPECT_EQ(prefixed.host, "gpu-7");
  EXPECT_EQ(prefixed.port, "80");
  EXPECT_EQ(prefixed.base_path, "/moe/v2");
}

TEST(HttpUrl, RejectsWhatItCannotServe) {
  for (const char* bad : {"https://h:1", "tcp://h:1", "http://:80", "http://h:", "http://h:8o", "http://h:1/?q=1",
                          "http://user@h:1"}) {
    EXPECT_THROW(parse_http_url(bad), Error) << bad;
  }
}

}  // namespace
}  // namespace moe::bench
