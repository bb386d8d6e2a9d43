// OpenAI /v1/completions and /v1/chat/completions request parsing and refusals.
#include <gtest/gtest.h>

#include <limits>

#include <nlohmann/json.hpp>

#include "api/generation_call.h"
#include "api_test_support.h"

namespace moe::api {
namespace {

using nlohmann::json;
using test::expect_api_error;

const std::string kModel = "qwen3-moe-tiny";

TEST(CompletionRequest, ReadsOpenAiFieldsWithOpenAiDefaults) {
  const GenerationCall call = parse_completion({{"model", kModel},
                                                {"prompt", "Once"},
                                                {"temperature", 0.7},
                                                {"top_p", 0.9},
                                                {"n", 2},
                                                {"stop", {"\n\n", "END"}},
                                                {"seed", 5},
                                                {"logprobs", 0},
                                                {"stream", true},
                                                {"stream_options", {{"include_usage", true}}},
                                                {"return_routed_experts", true},
                                                {"routed_experts_format", "list"},
                                                {"routed_experts_dtype", "uint8"},
                                                {"top_k", 3},
                                                {"min_tokens", 2}},
                                               kModel);
  EXPECT_EQ(call.api, ApiKind::Completion);
  EXPECT_EQ(call.model, kModel);
  EXPECT_TRUE(call.stream);
  EXPECT_TRUE(call.include_usage);
  EXPECT_EQ(call.routing_format, RoutingFormat::List);
  ASSERT_EQ(call.requests.size(), 1u);
  const msg::GenerateRequest& request = call.requests.front();
  EXPECT_EQ(request.text, "Once");
  EXPECT_EQ(request.sampling.max_new_tokens, 16);  // OpenAI's default
  EXPECT_FLOAT_EQ(request.sampling.temperature, 0.7f);
  EXPECT_FLOAT_EQ(request.sampling.top_p, 0.9f);
  EXPECT_EQ(request.sampling.n, 2);
  EXPECT_EQ(request.sampling.stop, (std::vector<std::string>{"\n\n", "END"}));
  EXPECT_EQ(request.sampling.seed, 5u);
  EXPECT_EQ(request.sampling.top_k, 3);
  EXPECT_EQ(request.sampling.min_new_tokens, 2);
  EXPECT_TRUE(request.return_logprob);
  EXPECT_TRUE(request.stream);
  EXPECT_TRUE(request.routing.return_routed_experts);
  EXPECT_EQ(request.routing.dtype, "uint8");
  EXPECT_TRUE(request.routing.raw);
}

TEST(CompletionRequest, AcceptsEveryPromptForm) {
  const auto prompts = [](json prompt) { return parse_completion({{"prompt", std::move(prompt)}}, kModel).requests; };
  EXPECT_EQ(prompts("a").front().text, "a");
  const auto strings = prompts({"a", "b", "c"});
  ASSERT_EQ(strings.size(), 3u);
  EXPECT_EQ(strings[2].text, "c");
  const auto ids = prompts({5, 6});
  ASSERT_EQ(ids.size(), 1u);
  EXPECT_EQ(ids.front().input_ids, (std::vector<int32_t>{5, 6}));
  const auto id_lists = prompts({{5}, {6, 7}});
  ASSERT_EQ(id_lists.size(), 2u);
  EXPECT_EQ(id_lists[1].input_ids, (std::vector<int32_t>{6, 7}));
  EXPECT_EQ(parse_completion({{"prompt", "a"}}, kModel).model, kModel);  // `model` may be left out
}

TEST(CompletionRequest, RefusesBadValuesNamingTheField) {
  const auto with = [](json extra) {
    json body = {{"model", kModel}, {"prompt", "x"}};
    body.update(extra);
    return body;
  };
  expect_api_error([] { parse_completion({{"model", kModel}}, kModel); }, 400, "prompt", "required");
  expect_api_error([] { parse_completion({{"prompt", json::array()}}, kModel); }, 400, "prompt", "non-empty");
  expect_api_error([&] { parse_completion(with({{"max_tokens", 0}}), kModel); }, 400, "max_tokens", "at least 1");
  expect_api_error([&] { parse_completion(with({{"temperature", -1}}), kModel); }, 400, "temperature", ">= 0");
  expect_api_error([&] { parse_completion(with({{"top_p", 0}}), kModel); }, 400, "top_p", "(0, 1]");
  expect_api_error([&] { parse_completion(with({{"n", 0}}), kModel); }, 400, "n", "at least 1");
  expect_api_error([&] { parse_completion(with({{"seed", "7"}}), kModel); }, 400, "seed", "integer");
  expect_api_error([&] { parse_completion(with({{"logprobs", 21}}), kModel); }, 400, "logprobs", "[0, 20]");
  expect_api_error([&] { parse_completion(with({{"logprobs", -1}}), kModel); }, 400, "logprobs", "[0, 20]");
  expect_api_error([&] { parse_completion(with({{"echo", true}}), kModel); }, 400, "echo", "not supported");
  expect_api_error([&] { parse_completion(with({{"best_of", 3}}), kModel); }, 400, "best_of", "equal to n");
  expect_api_error([&] { parse_completion(with({{"presence_penalty", 2.5}}), kModel); }, 400, "presence_penalty",
                   "[-2, 2]");
  expect_api_error([&] { parse_completion(with({{"frequency_penalty", -3}}), kModel); }, 400, "frequency_penalty",
                   "[-2, 2]");
  expect_api_error([&] { parse_completion(with({{"repetition_penalty", 0}}), kModel); }, 400, "repetition_penalty",
                   "(0, 2]");
  expect_api_error([&] { parse_completion(with({{"logit_bias", {{"12", 101}}}}), kModel); }, 400, "logit_bias",
                   "[-100, 100]");
  expect_api_error([&] { parse_completion(with({{"logit_bias", {{"x1", 1}}}}), kModel); }, 400, "logit_bias",
                   "token ids");
  expect_api_error([&] { parse_completion(with({{"logit_bias", {1, 2}}}), kModel); }, 400, "logit_bias", "object");
  expect_api_error([&] { parse_completion(with({{"logit_bias", {{"7", "high"}}}}), kModel); }, 400, "logit_bias.7",
                   "number");
  expect_api_error([&] { parse_completion(with({{"routed_experts_format", "csv"}}), kModel); }, 400,
                   "routed_experts_format", "\"base64\" or \"list\"");
  expect_api_error([&] { parse_completion(with({{"routed_experts_dtype", "float"}}), kModel); }, 400,
                   "routed_experts_dtype", "int32");
  expect_api_error([&] { parse_completion(with({{"stream_options", {{"include_usage", "yes"}}}}), kModel); }, 400,
                   "stream_options.include_usage", "true or false");
  // Defaults sent explicitly are fine.
  EXPECT_NO_THROW(parse_completion(with({{"echo", false}, {"presence_penalty", 0}, {"best_of", 1}}), kModel));
}

TEST(CompletionRequest, UnknownModelIsNotFound) {
  expect_api_error([] { parse_completion({{"model", "gpt-4"}, {"prompt", "x"}}, kModel); }, 404, "", "gpt-4");
  try {
    parse_completion({{"model", "gpt-4"}, {"prompt", "x"}}, kModel);
  } catch (const ApiError& e) {
    EXPECT_EQ(e.code(), "model_not_found");
  }
}

TEST(ChatRequest, ReadsMessagesAndChatFields) {
  const GenerationCall call =
      parse_chat_completion({{"model", kModel},
                             {"messages",
                              {{{"role", "system"}, {"content", "Be brief."}},
                               {{"role", "user"},
                                {"content", {{{"type", "text"}, {"text", "Hi "}}, {{"type", "text"}, {"text", "there"}}}}},
                               {{"role", "assistant"}, {"content", nullptr}}}},
                             {"max_tokens", 50},
                             {"max_completion_tokens", 20},
                             {"logprobs", true},
                             {"top_logprobs", 0},
                             {"return_routed_experts", true},
                             {"chat_template_kwargs", {{"enable_thinking", false}}}},
                            kModel);
  EXPECT_EQ(call.api, ApiKind::ChatCompletion);
  ASSERT_EQ(call.requests.size(), 1u);
  const msg::GenerateRequest& request = call.requests.front();
  const std::vector<msg::ChatMessage> expected = {
      {"system", "Be brief."}, {"user", "Hi there"}, {"assistant", ""}};
  EXPECT_EQ(request.messages, expected);
  EXPECT_EQ(request.sampling.max_new_tokens, 20);  // max_completion_tokens wins over max_tokens
  EXPECT_TRUE(request.return_logprob);
  EXPECT_TRUE(request.routing.return_routed_experts);
  EXPECT_EQ(json::parse(request.chat_template_kwargs), json({{"enable_thinking", false}}));
}

TEST(ChatRequest, HasNoTokenLimitByDefault) {
  const GenerationCall call = parse_chat_completion({{"messages", {{{"role", "user"}, {"content", "x"}}}}}, kModel);
  EXPECT_EQ(call.requests.front().sampling.max_new_tokens, std::numeric_limits<int32_t>::max());
  EXPECT_FALSE(call.requests.front().return_logprob);
}

TEST(ChatRequest, RefusesBadMessagesAndUnsupportedFields) {
  const json user = {{"role", "user"}, {"content", "x"}};
  const auto with = [&](json extra) {
    json body = {{"messages", {user}}};
    body.update(extra);
    return body;
  };
  expect_api_error([] { parse_chat_completion({{"model", kModel}}, kModel); }, 400, "messages", "non-empty list");
  expect_api_error([] { parse_chat_completion({{"messages", {{{"content", "x"}}}}}, kModel); }, 400,
                   "messages[0].role", "required");
  expect_api_error([] { parse_chat_completion({{"messages", {"hello"}}}, kModel); }, 400, "messages[0]",
                   "must be an object");
  expect_api_error(
      [] {
        parse_chat_completion(
            {{"messages", {{{"role", "user"}, {"content", {{{"type", "image_url"}, {"image_url", "u"}}}}}}}}, kModel);
      },
      400, "messages[0].content[0].type", "only content part");
  expect_api_error([&] { parse_chat_completion(with({{"max_completion_tokens", 0}}), kModel); }, 400,
                   "max_completion_tokens", "at least 1");
  expect_api_error([&] { parse_chat_completion(with({{"top_logprobs", 2}}), kModel); }, 400, "top_logprobs",
                   "needs \"logprobs\": true");
  expect_api_error([&] { parse_chat_completion(with({{"logprobs", true}, {"top_logprobs", 21}}), kModel); }, 400,
                   "top_logprobs", "[0, 20]");
  expect_api_error([&] { parse_chat_completion(with({{"logprobs", 1}}), kModel); }, 400, "logprobs", "true or false");
  expect_api_error([&] { parse_chat_completion(with({{"chat_template_kwargs", "enable_thinking"}}), kModel); }, 400,
                   "chat_template_kwargs", "must be an object");
  expect_api_error([&] { parse_chat_completion(with({{"tools", {{{"type", "function"}}}}}), kModel); }, 400, "tools",
                   "not supported");
  expect_api_error([&] { parse_chat_completion(with({{"response_format", {{"type", "json_object"}}}}), kModel); }, 400,
                   "response_format", "not supported");
  expect_api_error([&] { parse_chat_completion(with({{"model", "other"}}), kModel); }, 404, "", "other");
  EXPECT_NO_THROW(parse_chat_completion(with({{"response_format", {{"type", "text"}}}, {"tools", json::array()}}), kModel));
}

}  // namespace
}  // namespace moe::api
