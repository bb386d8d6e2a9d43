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
  EXPECT_EQ(request.field_names.max_new_tokens, "");
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
  EXPECT_EQ(request.routing.dtype, msg::RoutedExpertsDtype::Uint8);
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
  expect_api_error([&] { parse_completion(with({{"seed", "7"}}), kModel); }, 400, "seed", "integer");
  expect_api_error([&] { parse_completion(with({{"echo", "yes"}}), kModel); }, 400, "echo", "true or false");
  expect_api_error([&] { parse_completion({{"prompt", {1, 2}}, {"echo", true}}, kModel); }, 400, "echo",
                   "needs a text prompt");
  expect_api_error([&] { parse_completion(with({{"best_of", 3}}), kModel); }, 400, "best_of", "equal to n");
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

TEST(CompletionRequest, EchoAsksForThePromptLogprobsFromTheStartWhenLogprobsAreAsked) {
  const GenerationCall plain = parse_completion({{"prompt", "x"}, {"echo", true}}, kModel);
  EXPECT_TRUE(plain.echo);
  EXPECT_EQ(plain.requests.front().logprob_start_len, -1);  // the text only
  const GenerationCall scored = parse_completion({{"prompt", {"x", "y"}}, {"echo", true}, {"logprobs", 1}}, kModel);
  ASSERT_EQ(scored.requests.size(), 2u);
  for (const msg::GenerateRequest& request : scored.requests) {
    EXPECT_TRUE(request.return_logprob);
    EXPECT_EQ(request.logprob_start_len, 0);
  }
  EXPECT_FALSE(parse_completion({{"prompt", "x"}, {"logprobs", 1}}, kModel).echo);
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
  EXPECT_EQ(request.field_names.max_new_tokens, "max_completion_tokens");
  EXPECT_TRUE(request.return_logprob);
  EXPECT_TRUE(request.routing.return_routed_experts);
  EXPECT_EQ(json::parse(request.chat_template_kwargs), json({{"enable_thinking", false}}));
}

TEST(ChatRequest, HasNoTokenLimitByDefault) {
  const GenerationCall call = parse_chat_completion({{"messages", {{{"role", "user"}, {"content", "x"}}}}}, kModel);
  EXPECT_EQ(call.requests.front().sampling.max_new_tokens, std::numeric_limits<int32_t>::max());
  EXPECT_EQ(call.requests.front().field_names.max_new_tokens, "");  // clamped to the room the prompt leaves
  EXPECT_FALSE(call.requests.front().return_logprob);
  const GenerationCall limited =
      parse_chat_completion({{"messages", {{{"role", "user"}, {"content", "x"}}}}, {"max_tokens", 5}}, kModel);
  EXPECT_EQ(limited.requests.front().field_names.max_new_tokens, "max_tokens");
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
  expect_api_error([&] { parse_chat_completion(with({{"top_logprobs", 2}}), kModel); }, 400, "top_logprobs",
                   "needs \"logprobs\": true");
  expect_api_error([&] { parse_chat_completion(with({{"logprobs", 1}}), kModel); }, 400, "logprobs", "true or false");
  expect_api_error([&] { parse_chat_completion(with({{"chat_template_kwargs", "enable_thinking"}}), kModel); }, 400,
                   "chat_template_kwargs", "must be an object");
  expect_api_error([&] { parse_chat_completion(with({{"response_format", {{"type", "json_object"}}}}), kModel); }, 400,
                   "response_format", "not supported");
  expect_api_error([&] { parse_chat_completion(with({{"model", "other"}}), kModel); }, 404, "", "other");
  EXPECT_NO_THROW(parse_chat_completion(with({{"response_format", {{"type", "text"}}}, {"tools", json::array()}}), kModel));
}

const char* const kToolsBody = R"({
  "messages": [
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": null, "reasoning_content": "Use the tool.", "ignored": 1,
     "tool_calls": [{"id": "call_1", "type": "function",
                     "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"a\": 1}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "21 C"}],
  "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
             "properties": {"city": {"type": "string"}}}}}]})";

const OutputParsers kBothParsers{.qwen25_tool_calls = true, .qwen3_reasoning = true};

// tools and the messages' tool fields reach the template in the client's key order (arguments
// parsed from their JSON text, as vLLM passes them); other message keys are left out.
TEST(ChatRequest, ToolsAndToolFieldsKeepTheClientsOrder) {
  const GenerationCall call = parse_chat_completion(nlohmann::ordered_json::parse(kToolsBody), kModel, kBothParsers);
  const msg::GenerateRequest& request = call.requests.front();
  EXPECT_EQ(request.tools, R"([{"type":"function","function":{"name":"get_weather","parameters":{"type":"object",)"
                           R"("properties":{"city":{"type":"string"}}}}}])");
  const std::vector<msg::ChatMessage>& messages = *request.messages;
  EXPECT_EQ(messages[0].extra_fields, "");
  EXPECT_EQ(messages[1].content, "");
  EXPECT_EQ(messages[1].extra_fields,
            R"({"reasoning_content":"Use the tool.","tool_calls":[{"id":"call_1","type":"function",)"
            R"("function":{"name":"get_weather","arguments":{"city":"Paris","a":1}}}]})");
  EXPECT_EQ(messages[2].extra_fields, R"({"tool_call_id":"call_1"})");
  EXPECT_TRUE(call.output_parsing.tool_calls);
  EXPECT_TRUE(call.output_parsing.reasoning);
  EXPECT_EQ(call.output_parsing.continued_text, "");
}

// tool_choice as vLLM: "auto" (the default with tools) parses calls with a parser, "none" renders
// the tools without parsing, forcing a call is refused naming the field.
TEST(ChatRequest, ToolChoice) {
  nlohmann::ordered_json body = nlohmann::ordered_json::parse(kToolsBody);
  EXPECT_TRUE(parse_chat_completion(body, kModel, kBothParsers).output_parsing.tool_calls);
  // Without a parser, tools need tool_choice "none" (vLLM's rule): "auto" is their default.
  expect_api_error([&] { parse_chat_completion(body, kModel); }, 400, "tool_choice", "--tool-call-parser");
  body["tool_choice"] = "none";
  EXPECT_FALSE(parse_chat_completion(body, kModel, kBothParsers).output_parsing.tool_calls);
  EXPECT_FALSE(parse_chat_completion(body, kModel, kBothParsers).requests.front().tools.empty());
  body["tool_choice"] = "auto";
  EXPECT_TRUE(parse_chat_completion(body, kModel, kBothParsers).output_parsing.tool_calls);
  expect_api_error([&] { parse_chat_completion(body, kModel); }, 400, "tool_choice", "--tool-call-parser");
  body["tool_choice"] = "required";
  expect_api_error([&] { parse_chat_completion(body, kModel, kBothParsers); }, 400, "tool_choice", "forcing");
  body["tool_choice"] = {{"type", "function"}, {"function", {{"name", "get_weather"}}}};
  expect_api_error([&] { parse_chat_completion(body, kModel, kBothParsers); }, 400, "tool_choice", "forcing");
  body["tool_choice"] = "sometimes";
  expect_api_error([&] { parse_chat_completion(body, kModel, kBothParsers); }, 400, "tool_choice", "\"sometimes\"");
  body.erase("tools");
  body["tool_choice"] = "auto";
  expect_api_error([&] { parse_chat_completion(body, kModel, kBothParsers); }, 400, "tool_choice", "needs `tools`");
}

TEST(ChatRequest, RefusesMalformedToolsNamingTheField) {
  const nlohmann::ordered_json base = nlohmann::ordered_json::parse(kToolsBody);
  auto with = [&](const char* pointer, nlohmann::ordered_json value) {
    nlohmann::ordered_json body = base;
    body[nlohmann::ordered_json::json_pointer(pointer)] = std::move(value);
    return body;
  };
  expect_api_error([&] { parse_chat_completion(with("/tools", "get_weather"), kModel); }, 400, "tools", "list");
  expect_api_error([&] { parse_chat_completion(with("/tools/0/type", "retrieval"), kModel); }, 400, "tools[0].type");
  expect_api_error([&] { parse_chat_completion(with("/tools/0/function/name", ""), kModel); }, 400,
                   "tools[0].function.name");
  expect_api_error([&] { parse_chat_completion(with("/messages/1/tool_calls/0/function/arguments", "{x"), kModel); },
                   400, "messages[1].tool_calls[0].function.arguments", "JSON");
  expect_api_error([&] { parse_chat_completion(with("/messages/1/tool_calls", "call"), kModel); }, 400,
                   "messages[1].tool_calls", "list");
  expect_api_error([&] { parse_chat_completion(with("/messages/2/tool_call_id", 7), kModel); }, 400,
                   "messages[2].tool_call_id", "string");
}

TEST(ChatRequest, ContinueFinalMessageFeedsTheParsersTheLastMessage) {
  nlohmann::ordered_json body = nlohmann::ordered_json::parse(kToolsBody);
  body["messages"].push_back({{"role", "assistant"}, {"content", "<tool_call>\n{"}});
  body["continue_final_message"] = true;
  const GenerationCall call = parse_chat_completion(body, kModel, kBothParsers);
  EXPECT_TRUE(call.requests.front().continue_final_message);
  EXPECT_EQ(call.output_parsing.continued_text, "<tool_call>\n{");
}

}  // namespace
}  // namespace moe::api
