// SGLang /generate request parsing: every field, batches, and each refusal naming its field.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "api/generation_call.h"
#include "api_test_support.h"

namespace moe::api {
namespace {

using nlohmann::json;
using test::expect_api_error;

TEST(GenerateRequest, ReadsEveryField) {
  const json body = {{"rid", "r1"},
                     {"text", "Hello"},
                     {"sampling_params",
                      {{"max_new_tokens", 32},
                       {"temperature", 0},
                       {"top_p", 0.5},
                       {"top_k", 4},
                       {"min_p", 0.25},
                       {"stop", "\n"},
                       {"stop_token_ids", {7, 8}},
                       {"ignore_eos", true},
                       {"n", 3},
                       {"seed", 11},
                       {"skip_special_tokens", false},
                       {"presence_penalty", 0.5},
                       {"frequency_penalty", -0.25},
                       {"repetition_penalty", 1.5},
                       {"min_new_tokens", 2},
                       {"logit_bias", {{"12", -100}, {"3", 2.5}}}}},
                     {"stream", true},
                     {"return_logprob", true},
                     {"top_logprobs_num", 5},
                     {"logprob_start_len", 2},
                     {"return_routed_experts", true},
                     {"routed_experts_start_len", 5},
                     {"routed_experts_dtype", "int16"},
                     {"routed_experts_include_last", true},
                     {"return_router_weights", true},
                     {"router_weights_dtype", "float16"},
                     {"return_draft_routed_experts", true},
                     {"speculative", false}};
  const GenerationCall call = parse_generate(body);
  EXPECT_EQ(call.api, ApiKind::Generate);
  EXPECT_FALSE(call.batched);
  EXPECT_TRUE(call.stream);
  ASSERT_EQ(call.requests.size(), 1u);

  msg::GenerateRequest expected;
  expected.rid = "r1";
  expected.text = "Hello";
  expected.sampling.max_new_tokens = 32;
  expected.field_names.max_new_tokens = "sampling_params.max_new_tokens";
  expected.sampling.temperature = 0.0f;
  expected.sampling.top_p = 0.5f;
  expected.sampling.top_k = 4;
  expected.sampling.min_p = 0.25f;
  expected.sampling.stop = {"\n"};
  expected.sampling.stop_token_ids = {7, 8};
  expected.sampling.ignore_eos = true;
  expected.sampling.n = 3;
  expected.sampling.seed = 11;
  expected.sampling.skip_special_tokens = false;
  expected.sampling.presence_penalty = 0.5f;
  expected.sampling.frequency_penalty = -0.25f;
  expected.sampling.repetition_penalty = 1.5f;
  expected.sampling.min_new_tokens = 2;
  expected.sampling.logit_bias = {{12, -100.0f}, {3, 2.5f}};
  expected.stream = true;
  expected.return_logprob = true;
  expected.speculative = false;
  expected.top_logprobs_num = 5;
  expected.logprob_start_len = 2;
  expected.routing = {.return_routed_experts = true,
                      .start_len = 5,
                      .dtype = msg::RoutedExpertsDtype::Int16,
                      .include_last = true,
                      .return_router_weights = true,
                      .weights_dtype = msg::RouterWeightsDtype::Float16,
                      .raw = true,
                      .return_draft_routed_experts = true};
  EXPECT_EQ(call.requests.front(), expected);
}

TEST(GenerateRequest, DefaultsAreSGLangsAndRoutingIsAskedRaw) {
  const GenerationCall call = parse_generate({{"input_ids", {1, 2, 3}}});
  ASSERT_EQ(call.requests.size(), 1u);
  const msg::GenerateRequest& request = call.requests.front();
  EXPECT_EQ(request.input_ids, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_FALSE(request.text.has_value());
  EXPECT_EQ(request.sampling, msg::SamplingParams{});
  EXPECT_EQ(request.routing.dtype, msg::RoutedExpertsDtype::Int32);
  EXPECT_TRUE(request.routing.raw);
  EXPECT_TRUE(request.rid.empty());
}

TEST(GenerateRequest, LogprobStartLenIsOneValueOrOnePerPromptAndMinusOneByDefault) {
  EXPECT_EQ(parse_generate({{"text", "x"}}).requests.front().logprob_start_len, -1);
  EXPECT_EQ(parse_generate({{"text", "x"}, {"logprob_start_len", 0}}).requests.front().logprob_start_len, 0);
  const GenerationCall both = parse_generate({{"text", {"a", "b"}}, {"logprob_start_len", 3}});
  EXPECT_EQ(both.requests[0].logprob_start_len, 3);
  EXPECT_EQ(both.requests[1].logprob_start_len, 3);
  const GenerationCall each = parse_generate({{"input_ids", {{1, 2}, {3, 4, 5}}}, {"logprob_start_len", {1, -1}}});
  EXPECT_EQ(each.requests[0].logprob_start_len, 1);
  EXPECT_EQ(each.requests[1].logprob_start_len, -1);
}

TEST(GenerateRequest, ListsOfPromptsBecomeOneRequestEach) {
  const GenerationCall texts = parse_generate(
      {{"text", {"a", "b"}}, {"rid", {"x", "y"}}, {"sampling_params", {{{"n", 2}}, {{"max_new_tokens", 4}}}}});
  EXPECT_TRUE(texts.batched);
  ASSERT_EQ(texts.requests.size(), 2u);
  EXPECT_EQ(texts.requests[1].text, "b");
  EXPECT_EQ(texts.requests[1].rid, "y");
  EXPECT_EQ(texts.requests[0].sampling.n, 2);
  EXPECT_EQ(texts.requests[1].sampling.n, 1);
  EXPECT_EQ(texts.requests[1].sampling.max_new_tokens, 4);
  EXPECT_EQ(texts.requests[0].field_names.max_new_tokens, "");
  EXPECT_EQ(texts.requests[1].field_names.max_new_tokens, "sampling_params[1].max_new_tokens");
  EXPECT_EQ(texts.requests[1].field_names.sampling, "sampling_params[1].");

  const GenerationCall ids = parse_generate({{"input_ids", {{1, 2}, {3}}}, {"return_routed_experts", true}});
  EXPECT_TRUE(ids.batched);
  ASSERT_EQ(ids.requests.size(), 2u);
  EXPECT_EQ(ids.requests[1].input_ids, std::vector<int32_t>{3});
  EXPECT_TRUE(ids.requests[1].routing.return_routed_experts);
}

TEST(GenerateRequest, NullMeansAbsent) {
  const GenerationCall call = parse_generate({{"text", "x"}, {"rid", nullptr}, {"sampling_params", {{"top_k", nullptr}}}});
  EXPECT_EQ(call.requests.front().sampling.top_k, -1);
  EXPECT_TRUE(call.requests.front().rid.empty());
}

TEST(GenerateRequest, IntegralFloatsCountAsIntegers) {
  const GenerationCall call = parse_generate({{"text", "x"}, {"sampling_params", {{"max_new_tokens", 16.0}}}});
  EXPECT_EQ(call.requests.front().sampling.max_new_tokens, 16);
}

TEST(GenerateRequest, RefusesMalformedBodies) {
  expect_api_error([] { parse_json_body("{\"text\": "); }, 400, "", "not valid JSON");
  expect_api_error([] { parse_generate(json::array({1, 2})); }, 400, "", "must be a JSON object");
  expect_api_error([] { parse_generate(json::object()); }, 400, "", "needs `text` or `input_ids`");
  expect_api_error([] { parse_generate({{"text", "a"}, {"input_ids", {1}}}); }, 400, "", "only one of");
}

TEST(GenerateRequest, RefusesBadPrompts) {
  expect_api_error([] { parse_generate({{"text", 5}}); }, 400, "text", "must be a string");
  expect_api_error([] { parse_generate({{"text", json::array()}}); }, 400, "text", "empty list");
  expect_api_error([] { parse_generate({{"text", {"a", 1}}}); }, 400, "text[1]", "must be a string");
  expect_api_error([] { parse_generate({{"input_ids", json::array()}}); }, 400, "input_ids", "must not be empty");
  expect_api_error([] { parse_generate({{"input_ids", {1, -2}}}); }, 400, "input_ids[1]", "got -2");
  expect_api_error([] { parse_generate({{"input_ids", {{1}, {1.5}}}}); }, 400, "input_ids[1][0]", "1.5");
  expect_api_error([] { parse_generate({{"input_ids", {{1}, json::array()}}}); }, 400, "input_ids[1]", "empty");
}

TEST(GenerateRequest, RefusesWrongTypesNamingTheField) {
  const auto with = [](json params) { return json{{"text", "x"}, {"sampling_params", std::move(params)}}; };
  expect_api_error([&] { parse_generate(with({{"seed", -1}})); }, 400, "sampling_params.seed", "got -1");
  expect_api_error([&] { parse_generate(with({{"stop", {"a", 3}}})); }, 400, "sampling_params.stop[1]", "string");
  expect_api_error([&] { parse_generate(with({{"ignore_eos", "yes"}})); }, 400, "sampling_params.ignore_eos",
                   "true or false");
  expect_api_error([&] { parse_generate(with({{"max_new_tokens", 1e10}})); }, 400, "sampling_params.max_new_tokens",
                   "integer");
  expect_api_error([&] { parse_generate(with("greedy")); }, 400, "sampling_params", "must be an object");
  expect_api_error([&] { parse_generate(with({{"frequency_penalty", "x"}})); }, 400,
                   "sampling_params.frequency_penalty", "number");
  expect_api_error([&] { parse_generate(with({{"logit_bias", {{"-4", 1}}}})); }, 400, "sampling_params.logit_bias",
                   "token ids");
  expect_api_error([&] { parse_generate({{"text", "x"}, {"logprob_start_len", 1.5}}); }, 400, "logprob_start_len",
                   "integer");
  expect_api_error([&] { parse_generate({{"text", "x"}, {"logprob_start_len", "3"}}); }, 400, "logprob_start_len",
                   "integer");
  expect_api_error([&] { parse_generate({{"text", {"a", "b"}}, {"logprob_start_len", {0}}}); }, 400,
                   "logprob_start_len", "1 entries for 2 prompts");
  expect_api_error([&] { parse_generate({{"text", "x"}, {"stream_routed_experts", "rows"}}); }, 400,
                   "stream_routed_experts", "\"cumulative\" or \"delta\"");
}

TEST(GenerateRequest, RefusesBadBatchShapes) {
  expect_api_error([] { parse_generate({{"text", {"a", "b"}}, {"rid", "r"}}); }, 400, "rid", "one id per prompt");
  expect_api_error([] { parse_generate({{"text", {"a", "b"}}, {"rid", {"r"}}}); }, 400, "rid", "1 entries for 2");
  expect_api_error([] { parse_generate({{"text", {"a", "b"}}, {"sampling_params", {json::object()}}}); }, 400,
                   "sampling_params", "1 entries for 2");
}

TEST(GenerateRequest, RefusesBadRoutingOptions) {
  expect_api_error([] { parse_generate({{"text", "x"}, {"routed_experts_dtype", "int64"}}); }, 400,
                   "routed_experts_dtype", "int32, int16, uint8, auto");
  expect_api_error([] { parse_generate({{"text", "x"}, {"router_weights_dtype", "bf16"}}); }, 400,
                   "router_weights_dtype", "float32, float16");
  expect_api_error([] { parse_generate({{"text", "x"}, {"return_routed_experts", 1}}); }, 400,
                   "return_routed_experts", "true or false");
}

TEST(GenerateRequest, SpeculativeIsABoolean) {
  EXPECT_TRUE(parse_generate({{"text", "x"}}).requests.front().speculative);
  expect_api_error([] { parse_generate({{"text", "x"}, {"speculative", "no"}}); }, 400, "speculative", "true or false");
}

}  // namespace
}  // namespace moe::api
