#include "transport/client_protocol.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "expect_error.h"
#include "msgpack_json.h"
#include "sample_messages.h"

namespace moe::transport {
namespace {

using nlohmann::json;
using test::pack;
using test::unpack;

// The generation a frame without `op` asks for.
msg::GenerateRequest parse_generation(const std::string& frame) {
  return std::get<msg::GenerateRequest>(parse_client_request(frame));
}

void expect_request_error(const std::string& frame, const std::string& needle) {
  test::expect_error_containing([&] { parse_client_request(frame); }, needle);
}

TEST(ClientRequest, ParsesEverySGLangGenerateField) {
  const json request = {
      {"rid", "r1"},
      {"text", "Hello"},
      {"sampling_params",
       {{"temperature", 0},  // an integer where a float is expected, as Python clients send it
        {"top_p", 0.5},
        {"top_k", 5},
        {"min_p", 0.125},
        {"max_new_tokens", 16},
        {"min_new_tokens", 2},
        {"stop", {"a", "b"}},
        {"stop_token_ids", {1, 2}},
        {"ignore_eos", true},
        {"skip_special_tokens", false},
        {"n", 2},
        {"seed", 7}}},
      {"stream", true},
      {"return_logprob", true},
      {"return_routed_experts", true},
      {"routed_experts_start_len", 4},
      {"routed_experts_dtype", "auto"},
      {"routed_experts_include_last", true},
      {"return_router_weights", true},
      {"router_weights_dtype", "float16"},
      {"routed_experts_raw", true}};
  const msg::GenerateRequest parsed = parse_generation(pack(request));

  msg::GenerateRequest expected;
  expected.rid = "r1";
  expected.text = "Hello";
  expected.sampling.temperature = 0.0f;
  expected.sampling.top_p = 0.5f;
  expected.sampling.top_k = 5;
  expected.sampling.min_p = 0.125f;
  expected.sampling.max_new_tokens = 16;
  expected.field_names.max_new_tokens = "sampling_params.max_new_tokens";  // given: refused when it cannot fit
  expected.sampling.min_new_tokens = 2;
  expected.sampling.stop = {"a", "b"};
  expected.sampling.stop_token_ids = {1, 2};
  expected.sampling.ignore_eos = true;
  expected.sampling.skip_special_tokens = false;
  expected.sampling.n = 2;
  expected.sampling.seed = 7;
  expected.stream = true;
  expected.return_logprob = true;
  expected.routing = {.return_routed_experts = true, .start_len = 4, .dtype = msg::RoutedExpertsDtype::Auto, .include_last = true,
                      .return_router_weights = true, .weights_dtype = msg::RouterWeightsDtype::Float16, .raw = true};
  EXPECT_EQ(parsed, expected);
}

TEST(ClientRequest, DefaultsFollowSGLang) {
  const msg::GenerateRequest parsed = parse_generation(pack({{"input_ids", {1, 2, 151935}}}));
  EXPECT_EQ(parsed.input_ids, (std::vector<int32_t>{1, 2, 151935}));
  EXPECT_FALSE(parsed.text.has_value());
  EXPECT_EQ(parsed.sampling, msg::SamplingParams{});
  EXPECT_EQ(parsed.sampling.max_new_tokens, 128);
  EXPECT_EQ(parsed.field_names.max_new_tokens, "");  // the default: clamped to the room the prompt leaves
  EXPECT_EQ(parsed.routing.dtype, msg::RoutedExpertsDtype::Int32);
  EXPECT_FALSE(parsed.stream);
}

TEST(ClientRequest, RefusesUnknownFieldsNamingThemAndTreatsNilAsAbsent) {
  const json request = {{"text", "x"},
                        {"rid", nullptr},
                        {"lora_path", nullptr},
                        {"sampling_params", {{"frequency_penalty", 1.5}, {"max_new_tokens", 3}, {"seed", nullptr}}}};
  const msg::GenerateRequest parsed = parse_generation(pack(request));
  EXPECT_EQ(parsed.text, "x");
  EXPECT_EQ(parsed.rid, "");
  EXPECT_EQ(parsed.sampling.max_new_tokens, 3);
  EXPECT_FALSE(parsed.sampling.seed.has_value());
  test::expect_error_containing([] { parse_client_request(pack({{"text", "x"}, {"lora_path", "adapter"}})); },
                                "request.lora_path: is not a field this server knows");
  test::expect_error_containing(
      [] { parse_client_request(pack({{"text", "x"}, {"sampling_params", {{"regex", "a+"}}}})); },
      "request.sampling_params.regex: is not a field this server knows");
  test::expect_error_containing([] { parse_client_request(pack({{"op", "abort"}, {"rid", "r"}, {"all", true}})); },
                                "request.all: is not a field this server knows");
}

TEST(ClientRequest, SamplingSeedIsSGLangsNameForTheSeed) {
  EXPECT_EQ(parse_generation(pack({{"text", "x"}, {"sampling_params", {{"sampling_seed", 7}}}})).sampling.seed, 7u);
  EXPECT_EQ(parse_generation(pack({{"text", "x"}, {"sampling_params", {{"sampling_seed", 7}, {"seed", 7}}}})).sampling.seed,
            7u);
  test::expect_error_containing(
      [] { parse_client_request(pack({{"text", "x"}, {"sampling_params", {{"sampling_seed", 7}, {"seed", 8}}}})); },
      "request.sampling_params.sampling_seed: differs from `seed`");
}

TEST(ClientRequest, AcceptsOneStopStringAndChatMessages) {
  const msg::GenerateRequest parsed = parse_generation(
      pack({{"messages", {{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "Hi"}}}},
            {"sampling_params", {{"stop", "\n"}}}}));
  ASSERT_TRUE(parsed.messages.has_value());
  EXPECT_EQ(*parsed.messages, (std::vector<msg::ChatMessage>{{"system", "Be brief."}, {"user", "Hi"}}));
  EXPECT_EQ(parsed.sampling.stop, std::vector<std::string>{"\n"});
}

TEST(ClientRequest, NamesTheFieldOfAWrongType) {
  const std::vector<std::pair<json, std::string>> cases = {
      {{{"text", 5}}, "request.text: expected a string, got positive integer"},
      {{{"text", {"a", "b"}}}, "request.text: expected a string, got array"},
      {{{"input_ids", "1 2"}}, "request.input_ids: expected an array, got str"},
      {{{"input_ids", {1, "2"}}}, "request.input_ids[1]: expected an integer, got str"},
      {{{"input_ids", {1, 3000000000}}}, "request.input_ids[1]: 3000000000 is out of range"},
      {{{"text", "x"}, {"stream", "yes"}}, "request.stream: expected a bool, got str"},
      {{{"text", "x"}, {"sampling_params", 5}}, "request.sampling_params: expected a map, got positive integer"},
      {{{"text", "x"}, {"sampling_params", {{"temperature", "hot"}}}},
       "request.sampling_params.temperature: expected a number, got str"},
      {{{"text", "x"}, {"sampling_params", {{"max_new_tokens", 1.5}}}},
       "request.sampling_params.max_new_tokens: expected an integer, got float"},
      {{{"text", "x"}, {"sampling_params", {{"stop", {1}}}}}, "request.sampling_params.stop[0]: expected a string"},
      {{{"text", "x"}, {"sampling_params", {{"seed", -1}}}}, "request.sampling_params.seed: -1 is out of range"},
      {{{"messages", {{{"role", 1}, {"content", "x"}}}}}, "request.messages[0].role: expected a string"},
  };
  for (const auto& [request, needle] : cases) expect_request_error(pack(request), needle);
}

// A dtype is read into its enum where the frame is decoded: a name it does not know is refused there.
TEST(ClientRequest, NamesTheFieldOfAnUnknownDtype) {
  expect_request_error(pack({{"text", "x"}, {"routed_experts_dtype", "int64"}}),
                       "request.routed_experts_dtype: must be one of int32, int16, uint8, auto, got \"int64\"");
  expect_request_error(pack({{"text", "x"}, {"router_weights_dtype", "bf16"}}),
                       "request.router_weights_dtype: must be one of float32, float16, got \"bf16\"");
  expect_request_error(pack({{"text", "x"}, {"routed_experts_dtype", 2}}),
                       "request.routed_experts_dtype: expected a string");
}

TEST(ClientRequest, ARidOfInvalidUtf8IsRefusedAndNotEchoed) {
  const std::string frame = pack({{"rid", "r\xff\xfe"}, {"text", "x"}});
  expect_request_error(frame, "request.rid: must be valid UTF-8");
  try {
    parse_client_request(frame);
  } catch (const ClientRequestError& e) {
    EXPECT_EQ(e.rid(), "");
  }
}

TEST(ClientRequest, RejectsFramesThatAreNotAMap) {
  expect_request_error(pack({1, 2}), "request: expected a map, got array");
  expect_request_error("\xc1", "request: not valid msgpack");
  expect_request_error(pack({{"text", "x"}}) + "?", "request: 1 stray bytes");
}

TEST(ClientRequest, EncodeThenParseRoundTrips) {
  msg::GenerateRequest request = std::get<msg::GenerateRequest>(test::sample_messages()[0]);
  msg::GenerateRequest chat = request;
  request.messages.reset();  // the sample fills every prompt field; a client gives one
  chat.text.reset();
  // The encoder writes every sampling field, so the server takes max_new_tokens as given.
  request.field_names.max_new_tokens = chat.field_names.max_new_tokens = "sampling_params.max_new_tokens";
  EXPECT_EQ(parse_generation(encode_client_request(request)), request);
  EXPECT_EQ(parse_generation(encode_client_request(chat)), chat);
  msg::GenerateRequest ids_only;
  ids_only.input_ids = std::vector<int32_t>{3, 1, 4};
  ids_only.field_names.max_new_tokens = "sampling_params.max_new_tokens";
  EXPECT_EQ(parse_generation(encode_client_request(ids_only)), ids_only);
  EXPECT_FALSE(unpack(encode_client_request(ids_only)).contains("text"));
}

// A finished, non-streamed reply with logprobs and routed experts.
msg::TextOutput finished_output() {
  msg::TextOutput output;
  output.rid = "r1";
  output.output_ids = {7, 8};
  output.output_logprobs = {-0.5f, -0.25f};
  output.finish_reason = msg::FinishReason{msg::FinishKind::Length, std::nullopt, std::nullopt, ""};
  output.prompt_tokens = 12;
  output.cached_tokens = 4;
  output.text = "Once upon";
  output.completion_tokens = 2;
  output.routed_experts = msg::EncodedArray{std::string("\x01\x00\x02\x00", 4), true, {1, 1, 2}, "int16"};
  output.router_weights = msg::EncodedArray{"AACAPw==", false, {1, 1, 1}, "float32"};
  return output;
}

TEST(ClientReply, HasTheShapeOfSGLangGenerateResponse) {
  const json reply = unpack(encode_client_reply(finished_output()));
  EXPECT_EQ(reply["text"], "Once upon");
  EXPECT_EQ(reply["output_ids"], json({7, 8}));
  const json& meta = reply["meta_info"];
  EXPECT_EQ(meta["id"], "r1");
  EXPECT_EQ(meta["prompt_tokens"], 12);
  EXPECT_EQ(meta["completion_tokens"], 2);
  EXPECT_EQ(meta["cached_tokens"], 4);
  EXPECT_EQ(meta["finish_reason"], json({{"type", "length"}, {"length", 2}}));
  EXPECT_EQ(meta["output_token_logprobs"], json({{-0.5, 7, nullptr}, {-0.25, 8, nullptr}}));
  ASSERT_TRUE(meta["routed_experts"].is_binary());  // raw bytes, no base64
  EXPECT_EQ(meta["routed_experts"].get_binary(), (std::vector<uint8_t>{1, 0, 2, 0}));
  EXPECT_EQ(meta["routed_experts_shape"], json({1, 1, 2}));
  EXPECT_EQ(meta["routed_experts_dtype"], "int16");
  EXPECT_EQ(meta["router_weights"], "AACAPw==");
  EXPECT_EQ(meta["router_weights_dtype"], "float32");
}

// Top logprobs and token texts, and prompt logprobs (null where the prompt's first token has none),
// in SGLang's triples; the C++ client reads them all back.
TEST(ClientReply, CarriesTokenTextsTopLogprobsAndPromptLogprobs) {
  msg::TextOutput output = finished_output();
  output.output_token_texts = {"Once", " upon"};
  output.output_top_logprobs = {{{7, 1}, {-0.5f, -0.75f}, {"Once", "\xEF\xBF\xBD"}}, {{8}, {-0.25f}, {" upon"}}};
  output.input_token_ids = {5, 6};
  output.input_token_logprobs = {std::numeric_limits<float>::quiet_NaN(), -1.5f};
  output.input_token_texts = {"A", "B"};
  output.input_top_logprobs = {{}, {{6}, {-1.5f}, {"B"}}};
  const json meta = unpack(encode_client_reply(output))["meta_info"];
  EXPECT_EQ(meta["output_token_logprobs"], json({{-0.5, 7, "Once"}, {-0.25, 8, " upon"}}));
  EXPECT_EQ(meta["output_top_logprobs"][1], json({{-0.25, 8, " upon"}}));
  EXPECT_EQ(meta["input_token_logprobs"], json({{nullptr, 5, "A"}, {-1.5, 6, "B"}}));
  EXPECT_EQ(meta["input_top_logprobs"], json({nullptr, {{-1.5, 6, "B"}}}));

  const msg::TextOutput back = std::get<msg::TextOutput>(decode_client_reply(encode_client_reply(output)));
  EXPECT_TRUE(std::isnan(back.input_token_logprobs[0]));
  msg::TextOutput comparable = back;  // NaN equals nothing: compare the rest
  comparable.input_token_logprobs[0] = output.input_token_logprobs[0] = 0.0f;
  EXPECT_EQ(comparable, output);
}

TEST(ClientRequest, ReadsLogprobStartLen) {
  EXPECT_EQ(parse_generation(pack({{"text", "x"}, {"logprob_start_len", 3}})).logprob_start_len, 3);
  EXPECT_EQ(parse_generation(pack({{"text", "x"}})).logprob_start_len, -1);
  expect_request_error(pack({{"text", "x"}, {"logprob_start_len", "3"}}), "logprob_start_len");
}

TEST(ClientReply, StreamedChunkHasNullFinishReasonAndNoOptionalFields) {
  msg::TextOutput chunk;
  chunk.rid = "r";
  chunk.index = 1;
  chunk.output_ids = {8};
  chunk.prompt_tokens = 3;
  chunk.text = " upon";
  chunk.completion_tokens = 2;
  const json reply = unpack(encode_client_reply(chunk));
  EXPECT_TRUE(reply["meta_info"]["finish_reason"].is_null());
  EXPECT_EQ(reply["meta_info"]["index"], 1);
  EXPECT_FALSE(reply["meta_info"].contains("routed_experts"));
  EXPECT_FALSE(reply["meta_info"].contains("output_token_logprobs"));
  EXPECT_EQ(std::get<msg::TextOutput>(decode_client_reply(encode_client_reply(chunk))), chunk);
}

TEST(ClientReply, FinishReasonsAsSGLangSpellsThem) {
  msg::TextOutput output = finished_output();
  output.finish_reason = msg::FinishReason{msg::FinishKind::Stop, 151645, std::nullopt, ""};
  EXPECT_EQ(unpack(encode_client_reply(output))["meta_info"]["finish_reason"],
            json({{"type", "stop"}, {"matched", 151645}}));
  EXPECT_EQ(std::get<msg::TextOutput>(decode_client_reply(encode_client_reply(output))), output);

  output.finish_reason = msg::FinishReason{msg::FinishKind::Stop, std::nullopt, "</s>", ""};
  EXPECT_EQ(unpack(encode_client_reply(output))["meta_info"]["finish_reason"],
            json({{"type", "stop"}, {"matched", "</s>"}}));
  EXPECT_EQ(std::get<msg::TextOutput>(decode_client_reply(encode_client_reply(output))), output);

  output.finish_reason = msg::FinishReason{msg::FinishKind::Abort, std::nullopt, std::nullopt, "client went away"};
  EXPECT_EQ(unpack(encode_client_reply(output))["meta_info"]["finish_reason"],
            json({{"type", "abort"}, {"message", "client went away"}}));
  EXPECT_EQ(std::get<msg::TextOutput>(decode_client_reply(encode_client_reply(output))), output);

  EXPECT_EQ(std::get<msg::TextOutput>(decode_client_reply(encode_client_reply(finished_output()))),
            finished_output());
}

TEST(ClientReply, ErrorsCarryMessageTypeCodeAndRid) {
  const msg::ErrorReply error{
      .rid = "r9", .message = "request.text: expected a string", .code = 400, .source = "", .param = ""};
  const json reply = unpack(encode_client_error(error));
  EXPECT_EQ(reply, json({{"error",
                          {{"message", "request.text: expected a string"},
                           {"type", "invalid_request_error"},
                           {"code", 400},
                           {"rid", "r9"}}}}));
  EXPECT_EQ(std::get<msg::ErrorReply>(decode_client_reply(encode_client_error(error))), error);
  const json server_error =
      unpack(encode_client_error({.rid = "", .message = "worker died", .code = 500, .source = "", .param = ""}));
  EXPECT_EQ(server_error["error"]["type"], "server_error");
  EXPECT_FALSE(server_error["error"].contains("rid"));
}

TEST(ClientReply, MalformedRepliesNameTheField) {
  test::expect_error_containing([] { decode_client_reply(pack({{"text", "x"}})); }, "reply: missing `meta_info`");
  test::expect_error_containing(
      [] { decode_client_reply(pack({{"text", "x"}, {"meta_info", {{"finish_reason", {{"type", "tired"}}}}}})); },
      "reply.meta_info.finish_reason.type: unknown finish reason \"tired\"");
}

// Every string a client sends may come back (a weight version in every reply, a stop string as the
// match, an unknown name quoted in the error): one that is not UTF-8 is refused naming its field.
TEST(ClientRequest, EveryStringOfInvalidUtf8IsRefusedNamingItsField) {
  const std::vector<std::pair<json, std::string>> cases = {
      {{{"text", "x"}, {"sampling_params", {{"stop", "\xc3"}}}}, "request.sampling_params.stop: must be valid UTF-8"},
      {{{"text", "x"}, {"sampling_params", {{"stop", {"ok", "a\xff"}}}}},
       "request.sampling_params.stop[1]: must be valid UTF-8"},
      {{{"text", "x"}, {"routed_experts_dtype", "int\xfe"}}, "request.routed_experts_dtype: must be valid UTF-8"},
      {{{"op", "update_weights_from_disk"}, {"rid", "u"}, {"model_path", "/m"}, {"weight_version", "v\x80"}},
       "request.weight_version: must be valid UTF-8"},
      {{{"op", "abort\xff"}, {"rid", "u"}}, "request.op: must be valid UTF-8"},
  };
  for (const auto& [request, needle] : cases) expect_request_error(pack(request), needle);
}

}  // namespace
}  // namespace moe::transport
