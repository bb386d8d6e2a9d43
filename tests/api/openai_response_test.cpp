// OpenAI completion and chat answers: objects, usage, logprobs, routing split into prompt and
// completion rows (base64 and list forms), and streamed chunks.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "api/generation_call.h"
#include "api/response_builder.h"
#include "capture/routing_encoding.h"
#include "api_test_support.h"

namespace moe::api {
namespace {

using nlohmann::json;
using test::int32_rows;
using test::int32_values;
using test::text_output;

const std::string kModel = "m";

// Completion `index` of a request of P = 2 prompt tokens and G = 3 generated, 1 layer, top-2,
// in one final output: rows 0-1 are the prompt's (ids 0..3, the same for every sample), rows 2-3
// the completion's (ids 100*(index+1) ..). P+G-1 = 4 rows.
msg::TextOutput finished_sample(const std::string& rid, int32_t index) {
  msg::TextOutput output = text_output(rid, index, "abc", {7, 8, 9}, 2, 3);
  msg::EncodedArray prompt = int32_rows(2, 1, 2, 0);
  const msg::EncodedArray own = int32_rows(2, 1, 2, 100 * (index + 1));
  prompt.data += own.data;
  prompt.shape[0] = 4;
  output.routed_experts = prompt;
  output.output_logprobs = {-0.25f, -0.5f, -1.0f};
  output.output_token_texts = {"a", "b", "c"};
  output.finish_reason = test::finish(msg::FinishKind::Length);
  return output;
}

std::vector<int32_t> decoded(const json& object, const std::string& name) {
  EXPECT_EQ(object[name + "_dtype"], "int32");
  return int32_values(base64_decode(object[name].get<std::string>()));
}

TEST(OpenAiResponse, CompletionSplitsPromptRowsFromEachChoicesRows) {
  const GenerationCall call = parse_completion(
      {{"prompt", "x"}, {"n", 2}, {"logprobs", 0}, {"return_routed_experts", true}}, kModel);
  const auto builder = make_response_builder(call, "abc", 1700000000);
  builder->add(0, finished_sample("r", 1));
  builder->add(0, finished_sample("r", 0));
  ASSERT_TRUE(builder->finished());
  const json body = builder->response();
  EXPECT_EQ(body["id"], "cmpl-abc");
  EXPECT_EQ(body["object"], "text_completion");
  EXPECT_EQ(body["created"], 1700000000);
  EXPECT_EQ(body["model"], kModel);
  EXPECT_EQ(body["usage"], json({{"prompt_tokens", 2},
                                 {"completion_tokens", 6},
                                 {"total_tokens", 8},
                                 {"prompt_tokens_details", {{"cached_tokens", 0}}}}));
  EXPECT_EQ(body["prompt_routed_experts_shape"], json({2, 1, 2}));
  EXPECT_EQ(decoded(body, "prompt_routed_experts"), (std::vector<int32_t>{0, 1, 2, 3}));
  ASSERT_EQ(body["choices"].size(), 2u);
  for (int index = 0; index < 2; ++index) {
    const json& choice = body["choices"][static_cast<size_t>(index)];
    EXPECT_EQ(choice["index"], index);
    EXPECT_EQ(choice["text"], "abc");
    EXPECT_EQ(choice["finish_reason"], "length");
    EXPECT_EQ(choice["routed_experts_shape"], json({2, 1, 2}));
    const int32_t first = 100 * (index + 1);
    EXPECT_EQ(decoded(choice, "routed_experts"), (std::vector<int32_t>{first, first + 1, first + 2, first + 3}));
    EXPECT_EQ(choice["logprobs"]["tokens"], json({"a", "b", "c"}));
    EXPECT_FALSE(choice["logprobs"].contains("top_logprobs"));  // logprobs 0: the chosen tokens only
    EXPECT_EQ(choice["logprobs"]["token_logprobs"], json({-0.25, -0.5, -1.0}));
  }
}

TEST(OpenAiResponse, ListFormNestsRowsLayersAndExperts) {
  const GenerationCall call =
      parse_completion({{"prompt", "x"}, {"return_routed_experts", true}, {"routed_experts_format", "list"}}, kModel);
  const auto builder = make_response_builder(call, "abc", 0);
  builder->add(0, finished_sample("r", 0));
  const json body = builder->response();
  EXPECT_EQ(body["prompt_routed_experts"], json::parse("[[[0, 1]], [[2, 3]]]"));
  EXPECT_EQ(body["choices"][0]["routed_experts"], json::parse("[[[100, 101]], [[102, 103]]]"));
  EXPECT_FALSE(body.contains("prompt_routed_experts_shape"));
}

TEST(OpenAiResponse, SeveralPromptsGetPromptRowsAlignedWithThem) {
  const GenerationCall call = parse_completion({{"prompt", {"x", "y"}}, {"return_routed_experts", true}}, kModel);
  const auto builder = make_response_builder(call, "abc", 0);
  builder->add(0, finished_sample("r0", 0));
  builder->add(1, finished_sample("r1", 0));
  const json body = builder->response();
  ASSERT_TRUE(body["prompt_routed_experts"].is_array());
  EXPECT_EQ(body["prompt_routed_experts"].size(), 2u);
  EXPECT_EQ(body["prompt_routed_experts_shape"], json({{2, 1, 2}, {2, 1, 2}}));
  EXPECT_EQ(body["choices"][1]["index"], 1);
  EXPECT_EQ(body["usage"]["prompt_tokens"], 4);
}

TEST(OpenAiResponse, ChatCompletionHasAnAssistantMessage) {
  const GenerationCall call =
      parse_chat_completion({{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"logprobs", true}}, kModel);
  const auto builder = make_response_builder(call, "abc", 5);
  msg::TextOutput output = text_output("r", 0, "Hello!", {4, 5}, 9, 2);
  output.output_logprobs = {-0.125f, -2.0f};
  output.output_token_texts = {"Hello", "!"};
  output.finish_reason = test::finish(msg::FinishKind::Stop, 5);
  builder->add(0, output);
  const json body = builder->response();
  EXPECT_EQ(body["id"], "chatcmpl-abc");
  EXPECT_EQ(body["object"], "chat.completion");
  const json& choice = body["choices"][0];
  EXPECT_EQ(choice["message"], json({{"role", "assistant"}, {"content", "Hello!"}}));
  EXPECT_EQ(choice["finish_reason"], "stop");
  EXPECT_EQ(choice["stop_reason"], 5);
  EXPECT_EQ(choice["logprobs"]["content"][1],
            json({{"token", "!"}, {"logprob", -2.0}, {"bytes", {33}}, {"top_logprobs", json::array()}}));
  EXPECT_EQ(body["usage"]["total_tokens"], 11);
  EXPECT_FALSE(body.contains("prompt_routed_experts"));
}

// A chat call with both output parsers and a tool, answering `text` in one final output.
GenerationCall parsed_chat_call(bool stream) {
  const OutputParsers parsers{.qwen25_tool_calls = true, .qwen3_reasoning = true};
  return parse_chat_completion({{"messages", {{{"role", "user"}, {"content", "hi"}}}},
                                {"tools", {{{"type", "function"}, {"function", {{"name", "f"}}}}}},
                                {"stream", stream}},
                               kModel, parsers);
}

const std::string kParsedText = "<think>\nhm\n</think>\n\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": 1}}\n</tool_call>";

TEST(OpenAiResponse, ParsedChatMessageHasReasoningAndToolCalls) {
  const auto builder = make_response_builder(parsed_chat_call(false), "abc", 5);
  msg::TextOutput output = text_output("r", 0, kParsedText, {4, 5}, 9, 2);
  output.finish_reason = test::finish(msg::FinishKind::Stop, 5);
  builder->add(0, output);
  const json choice = builder->response()["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls");
  const json& message = choice["message"];
  EXPECT_EQ(message["reasoning_content"], "\nhm\n");
  EXPECT_EQ(message["content"], "\n\n");
  ASSERT_EQ(message["tool_calls"].size(), 1u);
  const json& call = message["tool_calls"][0];
  EXPECT_EQ(call["type"], "function");
  EXPECT_EQ(call["function"], json({{"name", "f"}, {"arguments", R"({"x":1})"}}));
  EXPECT_TRUE(call["id"].get<std::string>().starts_with("call_")) << call;
  EXPECT_EQ(call["id"].get<std::string>().size(), 29u);
  EXPECT_FALSE(call.contains("index"));
}

TEST(OpenAiResponse, ParsedChatWithoutCallsHasNullParts) {
  const auto builder = make_response_builder(parsed_chat_call(false), "abc", 5);
  msg::TextOutput output = text_output("r", 0, "<tool_call>{bad}</tool_call>", {4}, 9, 1);
  output.finish_reason = test::finish(msg::FinishKind::Length);
  builder->add(0, output);
  const json choice = builder->response()["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "length");
  EXPECT_EQ(choice["message"],
            json({{"role", "assistant"}, {"content", "<tool_call>{bad}</tool_call>"}, {"reasoning_content", nullptr}}));
}

// Streamed in pieces cut anywhere, the deltas add up to the unstreamed message; the call comes in
// one delta with its index, id, type, name and arguments, and the last chunk says "tool_calls".
TEST(OpenAiResponse, ParsedChatStreamsDeltas) {
  const auto builder = make_response_builder(parsed_chat_call(true), "abc", 5);
  std::string reasoning, content;
  json calls = json::array();
  json last;
  for (size_t at = 0; at < kParsedText.size(); at += 7) {
    msg::TextOutput output = text_output("r", 0, kParsedText.substr(at, 7), {4}, 9, 1);
    if (at + 7 >= kParsedText.size()) output.finish_reason = test::finish(msg::FinishKind::Stop, 5);
    for (const json& payload : builder->add(0, output)) {
      last = payload["choices"][0];
      const json& delta = last["delta"];
      if (delta.contains("role")) continue;
      content += delta["content"].get<std::string>();
      if (delta.contains("reasoning_content")) reasoning += delta["reasoning_content"].get<std::string>();
      if (delta.contains("tool_calls")) calls.insert(calls.end(), delta["tool_calls"].begin(), delta["tool_calls"].end());
    }
  }
  EXPECT_EQ(reasoning, "\nhm\n");
  EXPECT_EQ(content, "\n\n");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0]["index"], 0);
  EXPECT_EQ(calls[0]["function"], json({{"name", "f"}, {"arguments", R"({"x":1})"}}));
  EXPECT_EQ(last["finish_reason"], "tool_calls");
}

// Two tokens, each with two alternatives: "é" (two UTF-8 bytes) then a token that ends a
// character's first part, which decodes alone to U+FFFD (as vLLM names such a token).
msg::TextOutput with_top_logprobs() {
  msg::TextOutput output = text_output("r", 0, "é!", {4, 5}, 9, 2);
  output.output_logprobs = {-0.125f, -2.0f};
  output.output_token_texts = {"é", "\xEF\xBF\xBD"};
  output.output_top_logprobs = {{{4, 6}, {-0.125f, -3.0f}, {"é", "e"}},
                                {{7, 5}, {-1.5f, -2.0f}, {"x", "\xEF\xBF\xBD"}}};
  output.finish_reason = test::finish(msg::FinishKind::Length);
  return output;
}

TEST(OpenAiResponse, ChatTopLogprobsNameTokensByTextWithTheirBytes) {
  const GenerationCall call = parse_chat_completion(
      {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"logprobs", true}, {"top_logprobs", 2}}, kModel);
  EXPECT_EQ(call.requests.front().top_logprobs_num, 2);
  const auto builder = make_response_builder(call, "abc", 5);
  builder->add(0, with_top_logprobs());
  const json content = builder->response()["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), 2u);
  EXPECT_EQ(content[0]["token"], "é");
  EXPECT_EQ(content[0]["bytes"], json({195, 169}));
  EXPECT_EQ(content[0]["top_logprobs"],
            json({{{"token", "é"}, {"logprob", -0.125}, {"bytes", {195, 169}}},
                  {{"token", "e"}, {"logprob", -3.0}, {"bytes", {101}}}}));
  EXPECT_EQ(content[1]["bytes"], json({239, 191, 189}));
  EXPECT_EQ(content[1]["top_logprobs"][1]["logprob"], -2.0);
}

TEST(OpenAiResponse, TokensAsTokenIdsKeepTheIdForm) {
  const GenerationCall call = parse_chat_completion({{"messages", {{{"role", "user"}, {"content", "hi"}}}},
                                                     {"logprobs", true},
                                                     {"top_logprobs", 2},
                                                     {"return_tokens_as_token_ids", true}},
                                                    kModel);
  const auto builder = make_response_builder(call, "abc", 5);
  builder->add(0, with_top_logprobs());
  const json content = builder->response()["choices"][0]["logprobs"]["content"];
  EXPECT_EQ(content[0]["token"], "token_id:4");
  EXPECT_EQ(content[0]["bytes"], nullptr);
  EXPECT_EQ(content[1]["top_logprobs"][0], json({{"token", "token_id:7"}, {"logprob", -1.5}, {"bytes", nullptr}}));
}

TEST(OpenAiResponse, CompletionTopLogprobsAreMapsFromTokenToLogprob) {
  const GenerationCall call = parse_completion({{"prompt", "x"}, {"logprobs", 2}}, kModel);
  EXPECT_TRUE(call.requests.front().return_logprob);
  EXPECT_EQ(call.requests.front().top_logprobs_num, 2);
  const auto builder = make_response_builder(call, "abc", 5);
  builder->add(0, with_top_logprobs());
  const json logprobs = builder->response()["choices"][0]["logprobs"];
  EXPECT_EQ(logprobs["tokens"], json({"é", "\xEF\xBF\xBD"}));
  EXPECT_EQ(logprobs["top_logprobs"][0], json({{"é", -0.125}, {"e", -3.0}}));
}

TEST(OpenAiResponse, EchoRepeatsThePromptAndItsLogprobsWithANullFirst) {
  const GenerationCall call = parse_completion({{"prompt", "AB"}, {"echo", true}, {"logprobs", 1}}, kModel);
  const auto builder = make_response_builder(call, "abc", 5);
  builder->add(0, test::output_with_prompt_logprobs());
  const json choice = builder->response()["choices"][0];
  EXPECT_EQ(choice["text"], "ABc");
  EXPECT_EQ(choice["logprobs"]["tokens"], json({"A", "B", "c"}));
  EXPECT_EQ(choice["logprobs"]["token_logprobs"], json({nullptr, -2.0, -1.0}));
  EXPECT_EQ(choice["logprobs"]["top_logprobs"], json({nullptr, {{"B", -2.0}}, {{"c", -1.0}}}));
}

TEST(OpenAiResponse, StreamedEchoSendsThePromptWithTheFirstChunkOnly) {
  const GenerationCall call =
      parse_completion({{"prompt", "AB"}, {"echo", true}, {"logprobs", 1}, {"stream", true}}, kModel);
  const auto builder = make_response_builder(call, "abc", 5);
  const std::vector<msg::TextOutput> chunks = test::chunks_with_prompt_logprobs("d", 10);
  const std::vector<json> a = builder->add(0, chunks[0]), b = builder->add(0, chunks[1]);
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(a[0]["choices"][0]["text"], "ABc");
  EXPECT_EQ(a[0]["choices"][0]["logprobs"]["token_logprobs"], json({nullptr, -2.0, -1.0}));
  EXPECT_EQ(b[0]["choices"][0]["text"], "d");
  EXPECT_EQ(b[0]["choices"][0]["logprobs"]["tokens"], json({"d"}));
}

TEST(OpenAiResponse, ChatStreamSendsRoleThenContentThenUsage) {
  const GenerationCall call = parse_chat_completion({{"messages", {{{"role", "user"}, {"content", "hi"}}}},
                                                     {"stream", true},
                                                     {"stream_options", {{"include_usage", true}}}},
                                                    kModel);
  const auto builder = make_response_builder(call, "abc", 5);
  const std::vector<json> first = builder->add(0, text_output("r", 0, "Hel", {4}, 9, 1));
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0]["object"], "chat.completion.chunk");
  EXPECT_EQ(first[0]["choices"][0]["delta"], json({{"role", "assistant"}, {"content", ""}}));
  EXPECT_TRUE(first[0]["usage"].is_null());
  EXPECT_EQ(first[1]["choices"][0]["delta"], json({{"content", "Hel"}}));
  EXPECT_TRUE(first[1]["choices"][0]["finish_reason"].is_null());
  msg::TextOutput last = text_output("r", 0, "lo", {5}, 9, 2);
  last.finish_reason = test::finish(msg::FinishKind::Length);
  const std::vector<json> second = builder->add(0, last);
  ASSERT_EQ(second.size(), 1u);  // the role goes out once
  EXPECT_EQ(second[0]["choices"][0]["delta"], json({{"content", "lo"}}));
  EXPECT_EQ(second[0]["choices"][0]["finish_reason"], "length");
  const std::vector<json> closing = builder->closing_payloads();
  ASSERT_EQ(closing.size(), 1u);
  EXPECT_EQ(closing[0]["choices"], json::array());
  EXPECT_EQ(closing[0]["usage"]["completion_tokens"], 2);
  EXPECT_EQ(closing[0]["usage"]["prompt_tokens"], 9);
}

TEST(OpenAiResponse, CompletionStreamSplitsEachChunksRowsAtThePrompt) {
  const GenerationCall call =
      parse_completion({{"prompt", "x"}, {"n", 2}, {"stream", true}, {"return_routed_experts", true}}, kModel);
  const auto builder = make_response_builder(call, "abc", 0);
  EXPECT_TRUE(builder->closing_payloads().empty());  // no include_usage
  // Sample 1's first chunk: 2 prompt rows and its first own row; then its last own row.
  msg::TextOutput first = text_output("r", 1, "a", {7}, 2, 1);
  first.routed_experts = int32_rows(3, 1, 2, 0);
  msg::TextOutput second = text_output("r", 1, "b", {8}, 2, 2);
  second.routed_experts = int32_rows(1, 1, 2, 6);
  const std::vector<json> a = builder->add(0, first);
  const std::vector<json> b = builder->add(0, second);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0]["object"], "text_completion");
  EXPECT_EQ(a[0]["choices"][0]["index"], 1);
  EXPECT_EQ(a[0]["choices"][0]["text"], "a");
  EXPECT_FALSE(a[0].contains("prompt_routed_experts"));  // sample 0 sends the shared prompt rows
  EXPECT_FALSE(a[0].contains("usage"));
  EXPECT_EQ(decoded(a[0]["choices"][0], "routed_experts"), (std::vector<int32_t>{4, 5}));
  EXPECT_EQ(decoded(b[0]["choices"][0], "routed_experts"), (std::vector<int32_t>{6, 7}));
  // Sample 0: its first chunk carries the prompt rows at the chunk's top level.
  msg::TextOutput zero = text_output("r", 0, "c", {9}, 2, 1);
  zero.routed_experts = int32_rows(3, 1, 2, 0);
  const std::vector<json> c = builder->add(0, zero);
  EXPECT_EQ(decoded(c[0], "prompt_routed_experts"), (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(decoded(c[0]["choices"][0], "routed_experts"), (std::vector<int32_t>{4, 5}));
}

TEST(OpenAiResponse, ModelListNamesTheServedModelAndItsLength) {
  EXPECT_EQ(model_list("m", 3, 4096), json::parse(R"({"object": "list", "data": [{"id": "m", "object": "model",
                                                     "created": 3, "owned_by": "moe-engine",
                                                     "max_model_len": 4096}]})"));
}

}  // namespace
}  // namespace moe::api
