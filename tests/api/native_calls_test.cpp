// SGLang's native endpoints' requests and answers: update_weights_from_disk, release and resume
// of memory, abort_request, tokenize, detokenize, get_model_info; and the weight version on /generate and OpenAI answers.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "api/generation_call.h"
#include "api/native_calls.h"
#include "api/response_builder.h"
#include "api_test_support.h"

namespace moe::api {
namespace {

using nlohmann::json;
using test::expect_api_error;

TEST(UpdateWeights, ReadsSGLangsFieldsAndIgnoresTheRest) {
  const msg::UpdateWeights update = parse_update_weights(
      {{"model_path", "/ckpt/3"}, {"weight_version", "3"}, {"abort_all_requests", true}, {"load_format", nullptr},
       {"flush_cache", false}, {"is_async", false}});
  EXPECT_EQ(update.model_path, "/ckpt/3");
  EXPECT_EQ(update.weight_version, "3");
  EXPECT_TRUE(update.abort_all_requests);
  const msg::UpdateWeights plain = parse_update_weights({{"model_path", "/ckpt"}, {"weight_version", nullptr}});
  EXPECT_FALSE(plain.weight_version);  // the label stays, as SGLang keeps it
  EXPECT_FALSE(plain.abort_all_requests);
}

TEST(UpdateWeights, RefusalsNameTheField) {
  expect_api_error([] { parse_update_weights(json::object()); }, 400, "model_path", "is required");
  expect_api_error([] { parse_update_weights({{"model_path", ""}}); }, 400, "model_path", "must not be empty");
  expect_api_error([] { parse_update_weights({{"model_path", 3}}); }, 400, "model_path");
  expect_api_error([] { parse_update_weights({{"model_path", "/c"}, {"weight_version", 2}}); }, 400, "weight_version");
  expect_api_error([] { parse_update_weights({{"model_path", "/c"}, {"abort_all_requests", "yes"}}); }, 400,
                   "abort_all_requests");
  expect_api_error([] { parse_update_weights(json::array()); }, 400, "");
}

TEST(UpdateWeights, AnswerIsSGLangsWithItsStatus) {
  msg::WeightsUpdated answer;
  answer.success = true;
  answer.message = "loaded /ckpt/3";
  answer.weight_version = "3";
  EXPECT_EQ(weights_updated_json(answer), json({{"success", true}, {"message", "loaded /ckpt/3"}, {"weight_version", "3"}}));
  EXPECT_EQ(weights_updated_status(answer), 200);
  answer.success = false;
  EXPECT_EQ(weights_updated_status(answer), 400);
}

TEST(MemoryOccupation, TagsAreSGLangsAndEveryTagWhenNoneIsGiven) {
  for (const std::string_view body : {"", " ", "{}", R"({"tags": null})"}) {
    const msg::UpdateWeights all = parse_memory_occupation(body, msg::MemoryAction::Release);
    EXPECT_EQ(all.memory, msg::MemoryAction::Release) << body;
    EXPECT_TRUE(all.weights_tag && all.kv_cache_tag) << body;
  }
  const msg::UpdateWeights kv = parse_memory_occupation(R"({"tags": ["kv_cache"]})", msg::MemoryAction::Resume);
  EXPECT_EQ(kv.memory, msg::MemoryAction::Resume);
  EXPECT_FALSE(kv.weights_tag);
  EXPECT_TRUE(kv.kv_cache_tag);
  // CUDA graphs are kept (their memory keeps its addresses): the tag asks for nothing.
  const msg::UpdateWeights graphs = parse_memory_occupation(R"({"tags": ["cuda_graph"]})", msg::MemoryAction::Release);
  EXPECT_FALSE(graphs.weights_tag || graphs.kv_cache_tag);
}

TEST(MemoryOccupation, RefusalsNameTheField) {
  const auto release = [](std::string_view body) { parse_memory_occupation(body, msg::MemoryAction::Release); };
  expect_api_error([&] { release(R"({"tags": ["weights", "gpu"]})"); }, 400, "tags[1]", "weights, kv_cache, cuda_graph");
  expect_api_error([&] { release(R"({"tags": "weights"})"); }, 400, "tags", "a list of tags");
  expect_api_error([&] { release(R"({"tags": [], "size": 3})"); }, 400, "size");
}

TEST(AbortRequest, ByRidOrAll) {
  const AbortCall one = parse_abort_request({{"rid", "g1"}});
  EXPECT_EQ(one.rid, "g1");
  EXPECT_FALSE(one.all);
  EXPECT_TRUE(parse_abort_request({{"abort_all", true}}).all);
  expect_api_error([] { parse_abort_request(json::object()); }, 400, "", "either `rid`");
  expect_api_error([] { parse_abort_request({{"rid", "g"}, {"abort_all", true}}); }, 400, "", "either `rid`");
  expect_api_error([] { parse_abort_request({{"rid", ""}}); }, 400, "rid");
  expect_api_error([] { parse_abort_request({{"rid", 4}}); }, 400, "rid");
}

TEST(Tokenize, OneTextOrAList) {
  const TokenizeCall one = parse_tokenize({{"text", "hi"}});
  EXPECT_EQ(one.texts, std::vector<std::string>{"hi"});
  EXPECT_FALSE(one.batched);
  EXPECT_EQ(tokenize_json({{1, 2}}, false, 64), json({{"tokens", {1, 2}}, {"count", 2}, {"max_model_len", 64}}));
  const TokenizeCall list = parse_tokenize({{"prompt", {"a", "b"}}});
  EXPECT_EQ(list.texts, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(list.batched);
  EXPECT_EQ(tokenize_json({{1}, {2, 3}}, true, 64),
            json({{"tokens", {{1}, {2, 3}}}, {"count", {1, 2}}, {"max_model_len", 64}}));
  expect_api_error([] { parse_tokenize(json::object()); }, 400, "", "one of `text` and `prompt`");
  expect_api_error([] { parse_tokenize({{"text", 1}}); }, 400, "text");
  expect_api_error([] { parse_tokenize({{"prompt", {"a", 2}}}); }, 400, "prompt[1]");
  expect_api_error([] { parse_tokenize({{"text", json::array()}}); }, 400, "text", "empty list");
}

TEST(Detokenize, OneListOrSeveral) {
  const DetokenizeCall one = parse_detokenize({{"tokens", {5, 6}}});
  EXPECT_EQ(one.tokens, (std::vector<std::vector<int32_t>>{{5, 6}}));
  EXPECT_EQ(one.fields, std::vector<std::string>{"tokens"});
  EXPECT_EQ(detokenize_json({"ab"}, false), json({{"text", "ab"}}));
  const DetokenizeCall several = parse_detokenize({{"tokens", {{5}, {6, 7}}}});
  EXPECT_TRUE(several.batched);
  EXPECT_EQ(several.fields, (std::vector<std::string>{"tokens[0]", "tokens[1]"}));
  EXPECT_EQ(detokenize_json({"a", "b"}, true), json({{"text", {"a", "b"}}}));
  EXPECT_EQ(parse_detokenize({{"tokens", json::array()}}).tokens, (std::vector<std::vector<int32_t>>{{}}));
  expect_api_error([] { parse_detokenize(json::object()); }, 400, "tokens", "is required");
  expect_api_error([] { parse_detokenize({{"tokens", {1, -2}}}); }, 400, "tokens[1]");
  expect_api_error([] { parse_detokenize({{"tokens", {{1}, {"x"}}}}); }, 400, "tokens[1][0]");
}

TEST(ModelInfo, HasSGLangsFieldsAndTheMoeShape) {
  const json info = model_info_json({"/m", "/t", "v2", "Qwen3MoeForCausalLM", 4, 16, 4, 8192});
  EXPECT_EQ(info["model_path"], "/m");
  EXPECT_EQ(info["tokenizer_path"], "/t");
  EXPECT_EQ(info["is_generation"], true);
  EXPECT_EQ(info["weight_version"], "v2");
  EXPECT_EQ(info["num_moe_layers"], 4);
  EXPECT_EQ(info["num_experts"], 16);
  EXPECT_EQ(info["top_k"], 4);
  EXPECT_EQ(info["max_model_len"], 8192);
}

TEST(WeightVersion, IsInGenerateMetaInfoAndOpenAiMetadata) {
  msg::TextOutput output = test::text_output("r", 0, "x", {7}, 2, 1);
  output.finish_reason = test::finish(msg::FinishKind::Length);
  output.weight_version = "step-4";
  GenerationCall generate = parse_generate({{"text", "hi"}});
  generate.requests.front().rid = "r";
  auto builder = make_response_builder(generate, "r", 0);
  builder->add(0, output);
  EXPECT_EQ(builder->response()["meta_info"]["weight_version"], "step-4");

  for (const bool stream : {false, true}) {
    GenerationCall completion = parse_completion({{"model", "m"}, {"prompt", "hi"}, {"stream", stream}}, "m");
    completion.requests.front().rid = "r";
    auto openai = make_response_builder(completion, "r", 0);
    const std::vector<json> chunks = openai->add(0, output);
    if (stream)
      EXPECT_EQ(chunks.back()["metadata"]["weight_version"], "step-4");
    else
      EXPECT_EQ(openai->response()["metadata"], json({{"weight_version", "step-4"}}));
  }
}

}  // namespace
}  // namespace moe::api
