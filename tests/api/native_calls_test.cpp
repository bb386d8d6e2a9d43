// SGLang's native endpoints' requests and answers: update_weights_from_disk, release and resume
// of memory, the weight-group calls, abort_request, tokenize, detokenize, get_model_info; and the weight version on /generate and OpenAI answers.
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

TEST(WeightGroupCalls, ReadSGLangsFields) {
  const msg::UpdateWeights join = parse_init_weights_update_group(
      {{"master_address", "10.0.0.1"}, {"master_port", 29500}, {"rank_offset", 1}, {"world_size", 2},
       {"group_name", "g"}, {"backend", "nccl"}});
  EXPECT_EQ(join.group.action, msg::WeightGroupAction::Join);
  EXPECT_EQ(join.group.master_address, "10.0.0.1");
  EXPECT_EQ(join.group.master_port, 29500);
  EXPECT_EQ(join.group.rank_offset, 1);
  EXPECT_EQ(join.group.world_size, 2);
  EXPECT_EQ(join.group.group_name, "g");
  EXPECT_FALSE(msg::loads_weights(join));

  const msg::UpdateWeights receive = parse_update_weights_from_distributed(
      {{"names", {"a.weight", "b.weight"}}, {"dtypes", {"bfloat16", "torch.float32"}}, {"shapes", {{4, 2}, {3}}},
       {"weight_version", "step-4"}, {"flush_cache", true}, {"load_format", nullptr}});
  EXPECT_EQ(receive.group.action, msg::WeightGroupAction::Receive);
  EXPECT_EQ(receive.group.group_name, "weight_update_group");  // SGLang's default
  EXPECT_EQ(receive.group.names, (std::vector<std::string>{"a.weight", "b.weight"}));
  EXPECT_EQ(receive.group.shapes, (std::vector<std::vector<int64_t>>{{4, 2}, {3}}));
  EXPECT_EQ(receive.weight_version, "step-4");
  EXPECT_TRUE(msg::loads_weights(receive));

  const msg::UpdateWeights leave = parse_destroy_weights_update_group(json::object());
  EXPECT_EQ(leave.group.action, msg::WeightGroupAction::Leave);
  EXPECT_EQ(leave.group.group_name, "weight_update_group");
}

TEST(WeightGroupCalls, RefusalsNameTheField) {
  const json join = {{"master_address", "h"}, {"master_port", 29500}, {"rank_offset", 1}, {"world_size", 2}};
  const auto init_with = [&](const char* field, const json& value) {
    json body = join;
    body[field] = value;
    parse_init_weights_update_group(body);
  };
  expect_api_error([&] { init_with("rank_offset", 0); }, 400, "rank_offset", "rank 0 is the trainer's");
  expect_api_error([&] { init_with("rank_offset", 2); }, 400, "rank_offset", "1..world_size-1");
  expect_api_error([&] { init_with("world_size", 1); }, 400, "world_size", "at least 2");
  expect_api_error([&] { init_with("master_port", 70000); }, 400, "master_port", "1..65535");
  expect_api_error([&] { init_with("backend", "gloo"); }, 400, "backend", "nccl");
  expect_api_error([&] { init_with("group_name", ""); }, 400, "group_name", "must not be empty");
  expect_api_error([&] { init_with("timeout", 30); }, 400, "timeout");
  expect_api_error([] { parse_init_weights_update_group({{"master_address", "h"}}); }, 400, "master_port", "required");

  const json receive = {{"names", {"a"}}, {"dtypes", {"bfloat16"}}, {"shapes", {{2, 2}}}};
  const auto update_with = [&](const char* field, const json& value) {
    json body = receive;
    body[field] = value;
    parse_update_weights_from_distributed(body);
  };
  expect_api_error([&] { update_with("dtypes", {"bfloat16", "float32"}); }, 400, "dtypes", "one dtype per name");
  expect_api_error([&] { update_with("dtypes", {"int8"}); }, 400, "dtypes[0]", "bfloat16, float16, float32");
  expect_api_error([&] { update_with("shapes", {{2, -1}}); }, 400, "shapes[0][1]");
  expect_api_error([&] { update_with("shapes", {2, 2}); }, 400, "shapes[0]", "a shape");
  expect_api_error(
      [] {
        parse_update_weights_from_distributed(
            {{"names", {"a", "a"}}, {"dtypes", {"bfloat16", "bfloat16"}}, {"shapes", {{1}, {1}}}});
      },
      400, "names[1]", "a second time");
  expect_api_error([&] { update_with("names", json::array()); }, 400, "names", "at least one");
  expect_api_error([&] { update_with("load_format", "flattened_bucket"); }, 400, "load_format", "one broadcast each");
  expect_api_error([&] { update_with("flush_cache", false); }, 400, "flush_cache");
  expect_api_error([] { parse_destroy_weights_update_group({{"group", "g"}}); }, 400, "group");
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
