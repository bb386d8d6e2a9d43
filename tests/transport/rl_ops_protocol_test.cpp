// The operations RL clients use over ZeroMQ: {"op": "abort"} and {"op": "update_weights_from_disk"}
// (SGLang's fields), their answers, and meta_info.weight_version on generation replies.
#include <gtest/gtest.h>

#include "expect_error.h"
#include "msgpack_json.h"
#include "transport/client_protocol.h"

namespace moe::transport {
namespace {

using nlohmann::json;
using test::pack;
using test::unpack;

TEST(AbortOp, NamesTheRequestToAbort) {
  EXPECT_EQ(std::get<AbortRequest>(parse_client_request(pack({{"op", "abort"}, {"rid", "g1"}}))), AbortRequest{"g1"});
  const AbortRequest request{"cli-7"};
  EXPECT_EQ(unpack(encode_client_request(request)), json({{"op", "abort"}, {"rid", "cli-7"}}));
  EXPECT_EQ(std::get<AbortRequest>(parse_client_request(encode_client_request(request))), request);
  test::expect_error_containing([] { parse_client_request(pack({{"op", "abort"}})); },
                                "request.rid: the request to abort must be named");
}

TEST(AbortOp, AnswerSaysWhetherItWasLive) {
  const AbortReply reply{"g1", true};
  EXPECT_EQ(unpack(encode_abort_reply(reply)),
            json({{"abort", {{"rid", "g1"}, {"aborted", true}}}, {"meta_info", {{"id", "g1"}}}}));
  EXPECT_EQ(std::get<AbortReply>(decode_client_reply(encode_abort_reply(reply))), reply);
}

TEST(UpdateWeightsOp, TakesSGLangsFields) {
  const auto parsed = std::get<UpdateWeightsRequest>(parse_client_request(
      pack({{"op", "update_weights_from_disk"}, {"rid", "u1"}, {"model_path", "/ckpt/7"}, {"weight_version", "7"},
            {"abort_all_requests", true}, {"load_format", nullptr}, {"flush_cache", true}})));
  EXPECT_EQ(parsed.rid, "u1");
  EXPECT_EQ(parsed.update.model_path, "/ckpt/7");
  EXPECT_EQ(parsed.update.weight_version, "7");
  EXPECT_TRUE(parsed.update.abort_all_requests);
  // Without weight_version the label stays (nil counts as not given).
  const auto unlabelled = std::get<UpdateWeightsRequest>(
      parse_client_request(pack({{"op", "update_weights_from_disk"}, {"model_path", "/ckpt"}, {"weight_version", nullptr}})));
  EXPECT_FALSE(unlabelled.update.weight_version);
  EXPECT_FALSE(unlabelled.update.abort_all_requests);

  UpdateWeightsRequest request;
  request.rid = "u2";
  request.update.model_path = "/ckpt/8";
  request.update.weight_version = "8";
  EXPECT_EQ(unpack(encode_client_request(request)), json({{"op", "update_weights_from_disk"}, {"rid", "u2"},
                                                          {"model_path", "/ckpt/8"}, {"weight_version", "8"},
                                                          {"abort_all_requests", false}, {"flush_cache", true},
                                                          {"admin_api_key", ""}}));
  EXPECT_EQ(std::get<UpdateWeightsRequest>(parse_client_request(encode_client_request(request))), request);
}

TEST(MemoryOccupationOps, TakeSGLangsTags) {
  const auto all = std::get<MemoryOccupationRequest>(parse_client_request(pack({{"op", "release_memory_occupation"}})));
  EXPECT_EQ(all.action, msg::MemoryAction::Release);
  EXPECT_FALSE(all.tags);  // every tag
  const auto some = std::get<MemoryOccupationRequest>(parse_client_request(
      pack({{"op", "resume_memory_occupation"}, {"rid", "m1"}, {"tags", {"kv_cache", "cuda_graph"}}})));
  EXPECT_EQ(some.action, msg::MemoryAction::Resume);
  EXPECT_EQ(some.tags, (std::vector{msg::MemoryTag::KvCache, msg::MemoryTag::CudaGraph}));
  msg::UpdateWeights update;
  msg::set_memory_tags(update, some.tags);
  EXPECT_FALSE(update.weights_tag);
  EXPECT_TRUE(update.kv_cache_tag);
  msg::set_memory_tags(update, all.tags);
  EXPECT_TRUE(update.weights_tag && update.kv_cache_tag);

  EXPECT_EQ(unpack(encode_client_request(some)),
            json({{"op", "resume_memory_occupation"}, {"rid", "m1"}, {"tags", {"kv_cache", "cuda_graph"}},
                  {"admin_api_key", ""}}));
  EXPECT_EQ(std::get<MemoryOccupationRequest>(parse_client_request(encode_client_request(some))), some);
  test::expect_error_containing(
      [] { parse_client_request(pack({{"op", "release_memory_occupation"}, {"tags", {"weights", "heap"}}})); },
      "request.tags[1]: must be one of weights, kv_cache, cuda_graph");
  test::expect_error_containing(
      [] { parse_client_request(pack({{"op", "release_memory_occupation"}, {"size", 1}})); }, "size");
}

TEST(PauseGenerationOp, TakesSGLangsModesAndAnswersAsSGLang) {
  EXPECT_EQ(std::get<PauseGenerationRequest>(parse_client_request(pack({{"op", "pause_generation"}}))).mode,
            msg::PauseMode::Abort);  // SGLang's default
  const PauseGenerationRequest request{"p1", msg::PauseMode::Retract};
  EXPECT_EQ(unpack(encode_client_request(request)), json({{"op", "pause_generation"}, {"rid", "p1"}, {"mode", "retract"}, {"admin_api_key", ""}}));
  EXPECT_EQ(std::get<PauseGenerationRequest>(parse_client_request(encode_client_request(request))), request);
  EXPECT_EQ(std::get<PauseGenerationRequest>(
                parse_client_request(pack({{"op", "pause_generation"}, {"mode", "in_place"}}))).mode,
            msg::PauseMode::InPlace);
  test::expect_error_containing(
      [] { parse_client_request(pack({{"op", "pause_generation"}, {"mode", "sideways"}})); },
      "request.mode: must be one of abort, retract, in_place, got \"sideways\"");
  EXPECT_EQ(std::get<ContinueGenerationRequest>(parse_client_request(pack({{"op", "continue_generation"}, {"rid", "c"}}))),
            ContinueGenerationRequest{"c"});

  const GenerationControlReply reply{"p1", "Generation paused successfully."};
  EXPECT_EQ(unpack(encode_generation_control_reply(reply)),
            json({{"message", "Generation paused successfully."}, {"status", "ok"}, {"meta_info", {{"id", "p1"}}}}));
  EXPECT_EQ(std::get<GenerationControlReply>(decode_client_reply(encode_generation_control_reply(reply))), reply);
}

TEST(UpdateWeightsOp, FlushCacheMayOnlyBeTrue) {
  test::expect_error_containing(
      [] { parse_client_request(pack({{"op", "update_weights_from_disk"}, {"model_path", "/m"}, {"flush_cache", false}})); },
      "request.flush_cache: must be true");
}

TEST(WeightGroupOps, TakeSGLangsFieldsAndRoundTrip) {
  const auto join = std::get<InitWeightGroupRequest>(parse_client_request(
      pack({{"op", "init_weights_update_group"}, {"rid", "j1"}, {"master_address", "10.0.0.1"}, {"master_port", 29500},
            {"rank_offset", 1}, {"world_size", 3}, {"group_name", "g"}, {"backend", "nccl"}})));
  EXPECT_EQ(join.update.group.action, msg::WeightGroupAction::Join);
  EXPECT_EQ(join.update.group.world_size, 3);
  EXPECT_EQ(std::get<InitWeightGroupRequest>(parse_client_request(encode_client_request(join))), join);

  const auto receive = std::get<UpdateFromWeightGroupRequest>(parse_client_request(
      pack({{"op", "update_weights_from_distributed"}, {"names", {"a"}}, {"dtypes", {"float16"}}, {"shapes", {{5}}},
            {"weight_version", "s2"}})));
  EXPECT_EQ(receive.update.group.action, msg::WeightGroupAction::Receive);
  EXPECT_EQ(receive.update.group.group_name, "weight_update_group");
  EXPECT_EQ(receive.update.group.shapes, (std::vector<std::vector<int64_t>>{{5}}));
  EXPECT_EQ(std::get<UpdateFromWeightGroupRequest>(parse_client_request(encode_client_request(receive))), receive);

  const auto leave = std::get<DestroyWeightGroupRequest>(
      parse_client_request(pack({{"op", "destroy_weights_update_group"}, {"group_name", "g"}})));
  EXPECT_EQ(leave.update.group.action, msg::WeightGroupAction::Leave);
  EXPECT_EQ(std::get<DestroyWeightGroupRequest>(parse_client_request(encode_client_request(leave))), leave);
}

TEST(WeightGroupOps, RefusalsNameTheField) {
  test::expect_error_containing(
      [] {
        parse_client_request(pack({{"op", "init_weights_update_group"}, {"master_address", "h"}, {"master_port", 1},
                                   {"rank_offset", 0}, {"world_size", 2}}));
      },
      "request.rank_offset: must be in 1..world_size-1");
  test::expect_error_containing(
      [] {
        parse_client_request(pack({{"op", "init_weights_update_group"}, {"master_address", "h"}, {"master_port", 1},
                                   {"rank_offset", 1}, {"world_size", 2}, {"backend", "gloo"}}));
      },
      "request.backend: must be \"nccl\"");
  test::expect_error_containing(
      [] {
        parse_client_request(pack({{"op", "update_weights_from_distributed"}, {"names", {"a"}}, {"dtypes", {"int8"}},
                                   {"shapes", {{1}}}}));
      },
      "request.dtypes[0]: must be one of bfloat16");
  test::expect_error_containing(
      [] {
        parse_client_request(pack({{"op", "update_weights_from_distributed"}, {"names", {"a"}},
                                   {"dtypes", {"bfloat16"}}, {"shapes", {{1}}}, {"flush_cache", false}}));
      },
      "request.flush_cache: must be true");
  test::expect_error_containing(
      [] { parse_client_request(pack({{"op", "destroy_weights_update_group"}, {"names", {"a"}}})); },
      "request.names: is not a field");
}

TEST(WeightVersionOps, TakeSGLangsFields) {
  const UpdateWeightVersionRequest relabel{"w1", "step-9", true};
  EXPECT_EQ(unpack(encode_client_request(relabel)),
            json({{"op", "update_weight_version"}, {"rid", "w1"}, {"new_version", "step-9"}, {"abort_all_requests", true},
                  {"admin_api_key", ""}}));
  EXPECT_EQ(std::get<UpdateWeightVersionRequest>(parse_client_request(encode_client_request(relabel))), relabel);
  test::expect_error_containing([] { parse_client_request(pack({{"op", "update_weight_version"}})); },
                                "request.new_version: must name the new version");
  EXPECT_EQ(std::get<GetWeightVersionRequest>(parse_client_request(pack({{"op", "get_weight_version"}, {"rid", "g"}}))),
            GetWeightVersionRequest{"g"});
}

TEST(UpdateWeightsOp, NeedsAModelPathOfTheRightType) {
  test::expect_error_containing([] { parse_client_request(pack({{"op", "update_weights_from_disk"}})); },
                                "request.model_path: must name a checkpoint directory");
  test::expect_error_containing(
      [] { parse_client_request(pack({{"op", "update_weights_from_disk"}, {"model_path", 5}})); },
      "request.model_path: expected a string");
}

TEST(UpdateWeightsOp, AnswerIsSGLangsWithTheVersionInEffect) {
  WeightsUpdatedReply reply;
  reply.rid = "u1";
  reply.answer.success = false;
  reply.answer.message = "loading /x failed";
  reply.answer.weight_version = "6";
  EXPECT_EQ(unpack(encode_weights_updated_reply(reply)),
            json({{"success", false}, {"message", "loading /x failed"}, {"weight_version", "6"},
                  {"meta_info", {{"id", "u1"}}}}));
  const auto decoded = std::get<WeightsUpdatedReply>(decode_client_reply(encode_weights_updated_reply(reply)));
  EXPECT_EQ(decoded.rid, "u1");
  EXPECT_FALSE(decoded.answer.success);
  EXPECT_EQ(decoded.answer.message, reply.answer.message);
  EXPECT_EQ(decoded.answer.weight_version, "6");
}

TEST(GenerationReply, CarriesTheWeightVersion) {
  msg::TextOutput output;
  output.rid = "g";
  output.weight_version = "step-3";
  EXPECT_EQ(unpack(encode_client_reply(output))["meta_info"]["weight_version"], "step-3");
  EXPECT_EQ(std::get<msg::TextOutput>(decode_client_reply(encode_client_reply(output))), output);
}

}  // namespace
}  // namespace moe::transport
