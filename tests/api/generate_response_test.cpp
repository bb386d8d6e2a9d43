// SGLang /generate answers built from engine outputs: whole bodies, lists, and streamed events.
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

// The int32 ids a meta_info carries, decoded as an SGLang client does (base64 → np.int32).
std::vector<int32_t> decoded_experts(const json& meta) {
  EXPECT_EQ(meta["routed_experts_dtype"], "int32");
  return int32_values(base64_decode(meta["routed_experts"].get<std::string>()));
}

// Two chunks of a request with P = 3 prompt tokens and G = 2 generated, 2 layers, top-2: the
// first chunk covers the prompt rows, the second the first generated token's row (P+G-1 = 4 rows).
std::vector<msg::TextOutput> two_chunks() {
  msg::TextOutput first = text_output("r1", 0, "Hel", {10}, 3, 1);
  first.routed_experts = int32_rows(3, 2, 2, 0);
  first.output_logprobs = {-0.5f};
  first.output_token_texts = {"Hel"};
  msg::TextOutput last = text_output("r1", 0, "lo", {11}, 3, 2);
  last.routed_experts = int32_rows(1, 2, 2, 12);
  last.output_logprobs = {-1.25f};
  last.output_token_texts = {"lo"};
  last.finish_reason = test::finish(msg::FinishKind::Stop, 11);
  last.cached_tokens = 2;
  return {first, last};
}

GenerationCall generate_call(json body) { return parse_generate(body); }

TEST(GenerateResponse, WholeAnswerConcatenatesChunksAsSGLangShapesIt) {
  const GenerationCall call = generate_call({{"text", "x"}, {"return_logprob", true}, {"return_routed_experts", true}});
  const auto builder = make_response_builder(call, "id", 0);
  for (const msg::TextOutput& output : two_chunks()) EXPECT_TRUE(builder->add(0, output).empty());
  ASSERT_TRUE(builder->finished());
  const json body = builder->response();
  EXPECT_EQ(body["text"], "Hello");
  EXPECT_EQ(body["output_ids"], json({10, 11}));
  const json& meta = body["meta_info"];
  EXPECT_EQ(meta["id"], "r1");
  EXPECT_EQ(meta["prompt_tokens"], 3);
  EXPECT_EQ(meta["completion_tokens"], 2);
  EXPECT_EQ(meta["cached_tokens"], 2);
  EXPECT_EQ(meta["finish_reason"], json({{"type", "stop"}, {"matched", 11}}));
  EXPECT_EQ(meta["output_token_logprobs"], json::parse("[[-0.5, 10, null], [-1.25, 11, null]]"));
  EXPECT_EQ(meta["routed_experts_shape"], json({4, 2, 2}));
  std::vector<int32_t> expected(16);
  for (int32_t i = 0; i < 16; ++i) expected[static_cast<size_t>(i)] = i;
  EXPECT_EQ(decoded_experts(meta), expected);
}

TEST(GenerateResponse, TopLogprobsAreListsOfTriplesWithTextWhenAsked) {
  const GenerationCall call = generate_call({{"text", "x"},
                                             {"return_logprob", true},
                                             {"top_logprobs_num", 2},
                                             {"return_text_in_logprobs", true}});
  EXPECT_EQ(call.requests.front().top_logprobs_num, 2);
  const auto builder = make_response_builder(call, "id", 0);
  msg::TextOutput output = text_output("r1", 0, "Hi", {10}, 3, 1);
  output.output_logprobs = {-0.5f};
  output.output_token_texts = {"Hi"};
  output.output_top_logprobs = {{{10, 3}, {-0.5f, -1.5f}, {"Hi", "Ho"}}};
  output.finish_reason = test::finish(msg::FinishKind::Length);
  builder->add(0, output);
  const json meta = builder->response()["meta_info"];
  EXPECT_EQ(meta["output_token_logprobs"], json::parse(R"([[-0.5, 10, "Hi"]])"));
  EXPECT_EQ(meta["output_top_logprobs"], json::parse(R"([[[-0.5, 10, "Hi"], [-1.5, 3, "Ho"]]])"));
}

TEST(GenerateResponse, PromptLogprobsComeBeforeTheOutputsWithANullFirstEntry) {
  for (const bool text : {false, true}) {
    const GenerationCall call = generate_call({{"text", "x"},
                                               {"return_logprob", true},
                                               {"top_logprobs_num", 1},
                                               {"logprob_start_len", 0},
                                               {"return_text_in_logprobs", text}});
    const auto builder = make_response_builder(call, "id", 0);
    builder->add(0, test::output_with_prompt_logprobs());
    const json meta = builder->response()["meta_info"];
    if (text) {
      EXPECT_EQ(meta["input_token_logprobs"], json::parse(R"([[null, 7, "A"], [-2.0, 8, "B"]])"));
      EXPECT_EQ(meta["input_top_logprobs"], json::parse(R"([null, [[-2.0, 8, "B"]]])"));
    } else {
      EXPECT_EQ(meta["input_token_logprobs"], json::parse(R"([[null, 7, null], [-2.0, 8, null]])"));
      EXPECT_EQ(meta["input_top_logprobs"], json::parse(R"([null, [[-2.0, 8, null]]])"));
    }
    EXPECT_EQ(meta["output_token_logprobs"].size(), 1u);
  }
}

TEST(GenerateResponse, PromptLogprobsOnlyWhenAskedAndRepeatedInEveryStreamedEvent) {
  const auto plain = make_response_builder(generate_call({{"text", "x"}, {"return_logprob", true}}), "id", 0);
  plain->add(0, test::output_with_prompt_logprobs());
  EXPECT_FALSE(plain->response()["meta_info"].contains("input_token_logprobs"));

  const auto streamed = make_response_builder(
      generate_call({{"text", "x"}, {"return_logprob", true}, {"logprob_start_len", 0}, {"stream", true}}), "id", 0);
  const std::vector<msg::TextOutput> chunks = test::chunks_with_prompt_logprobs("!", 11);
  const std::vector<json> first = streamed->add(0, chunks[0]), last = streamed->add(0, chunks[1]);
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(last.size(), 1u);
  // As output_token_logprobs, cumulative: the final event has the prompt's too.
  EXPECT_EQ(first[0]["meta_info"]["input_token_logprobs"].size(), 2u);
  EXPECT_EQ(last[0]["meta_info"]["input_token_logprobs"], first[0]["meta_info"]["input_token_logprobs"]);
  EXPECT_EQ(last[0]["meta_info"]["output_token_logprobs"].size(), 2u);
}

// The events of two_chunks() streamed for a /generate `body`: one per chunk.
std::vector<json> streamed_events(const json& body) {
  const auto builder = make_response_builder(generate_call(body), "id", 0);
  std::vector<json> events;
  for (const msg::TextOutput& output : two_chunks()) {
    const std::vector<json> added = builder->add(0, output);
    EXPECT_EQ(added.size(), 1u);
    events.insert(events.end(), added.begin(), added.end());
  }
  return events;
}

// The routed experts of two_chunks() answered unstreamed.
std::vector<int32_t> unstreamed_experts() {
  const auto whole = make_response_builder(generate_call({{"text", "x"}, {"return_routed_experts", true}}), "id", 0);
  for (const msg::TextOutput& output : two_chunks()) whole->add(0, output);
  return decoded_experts(whole->response()["meta_info"]);
}

TEST(GenerateResponse, StreamsTheWholeRoutingOnTheFinalChunkByDefault) {
  const std::vector<json> events = streamed_events({{"text", "x"}, {"stream", true}, {"return_routed_experts", true}});
  ASSERT_EQ(events.size(), 2u);
  EXPECT_FALSE(events[0]["meta_info"].contains("routed_experts"));
  EXPECT_EQ(events[1]["meta_info"]["routed_experts_shape"], json({4, 2, 2}));
  EXPECT_EQ(decoded_experts(events[1]["meta_info"]), unstreamed_experts());
}

TEST(GenerateResponse, StreamRepeatsTextAndCarriesEachChunksRowsWhenAskedForDeltas) {
  const std::vector<json> events = streamed_events(
      {{"text", "x"}, {"stream", true}, {"return_routed_experts", true}, {"stream_routed_experts", "delta"}});
  ASSERT_EQ(events.size(), 2u);
  const json& first = events[0];
  const json& last = events[1];
  // SGLang's default streaming: the text and ids so far.
  EXPECT_EQ(first["text"], "Hel");
  EXPECT_EQ(last["text"], "Hello");
  EXPECT_EQ(last["output_ids"], json({10, 11}));
  EXPECT_TRUE(first["meta_info"]["finish_reason"].is_null());
  EXPECT_EQ(last["meta_info"]["finish_reason"]["type"], "stop");
  EXPECT_FALSE(last["meta_info"].contains("output_token_logprobs"));  // not asked
  // Rows: each event its own; concatenated they are the unstreamed answer's.
  EXPECT_EQ(first["meta_info"]["routed_experts_shape"], json({3, 2, 2}));
  EXPECT_EQ(last["meta_info"]["routed_experts_shape"], json({1, 2, 2}));
  std::vector<int32_t> streamed = decoded_experts(first["meta_info"]);
  const std::vector<int32_t> tail = decoded_experts(last["meta_info"]);
  streamed.insert(streamed.end(), tail.begin(), tail.end());
  EXPECT_EQ(streamed, unstreamed_experts());
}

TEST(GenerateResponse, BatchesAndSamplesAnswerAListInPromptThenSampleOrder) {
  const GenerationCall call = generate_call({{"text", {"a", "b"}}, {"sampling_params", {{{"n", 2}}, {{"n", 1}}}}});
  const auto builder = make_response_builder(call, "id", 0);
  const auto finished = [](msg::TextOutput output, msg::FinishKind kind) {
    output.finish_reason = test::finish(kind);
    return output;
  };
  builder->add(1, finished(text_output("rb", 0, "B", {3}, 1, 1), msg::FinishKind::Length));
  builder->add(0, finished(text_output("ra", 1, "A1", {2}, 1, 1), msg::FinishKind::Length));
  EXPECT_FALSE(builder->finished());
  msg::TextOutput aborted = finished(text_output("ra", 0, "A0", {1}, 1, 1), msg::FinishKind::Abort);
  aborted.finish_reason->message = "client left";
  builder->add(0, aborted);
  ASSERT_TRUE(builder->finished());
  const json body = builder->response();
  ASSERT_TRUE(body.is_array());
  ASSERT_EQ(body.size(), 3u);
  EXPECT_EQ(body[0]["text"], "A0");
  EXPECT_EQ(body[0]["meta_info"]["finish_reason"], json({{"type", "abort"}, {"message", "client left"}}));
  EXPECT_EQ(body[1]["text"], "A1");
  EXPECT_EQ(body[1]["meta_info"]["index"], 1);
  EXPECT_EQ(body[2]["text"], "B");
  EXPECT_EQ(body[2]["meta_info"]["finish_reason"], json({{"type", "length"}, {"length", 1}}));
  EXPECT_FALSE(body[2]["meta_info"].contains("routed_experts"));
}

TEST(GenerateResponse, OneItemBatchIsStillAList) {
  const auto builder = make_response_builder(generate_call({{"input_ids", {{1, 2}}}}), "id", 0);
  msg::TextOutput output = text_output("r", 0, "t", {5}, 2, 1);
  output.finish_reason = test::finish(msg::FinishKind::Stop);
  output.finish_reason->matched_text = "\n";
  builder->add(0, output);
  const json body = builder->response();
  ASSERT_TRUE(body.is_array());
  EXPECT_EQ(body[0]["meta_info"]["finish_reason"], json({{"type", "stop"}, {"matched", "\n"}}));
}

TEST(GenerateResponse, RouterWeightsTravelLikeExperts) {
  const auto builder =
      make_response_builder(generate_call({{"text", "x"}, {"return_router_weights", true}}), "id", 0);
  msg::TextOutput output = text_output("r", 0, "t", {5}, 1, 1);
  output.router_weights = msg::EncodedArray{.data = std::string(8, '\0'), .raw = true, .shape = {1, 1, 2}, .dtype = "float32"};
  output.finish_reason = msg::FinishReason{};
  builder->add(0, output);
  const json meta = builder->response()["meta_info"];
  EXPECT_EQ(meta["router_weights"], base64_encode(std::string(8, '\0')));
  EXPECT_EQ(meta["router_weights_shape"], json({1, 1, 2}));
  EXPECT_EQ(meta["router_weights_dtype"], "float32");
}

// The draft's rows: their own fields beside routed_experts, with the draft's shape; streamed whole on
// the final chunk or, with deltas, each chunk's own.
TEST(GenerateResponse, DraftRowsTravelApartFromTheTargets) {
  std::vector<msg::TextOutput> chunks = two_chunks();
  chunks[0].draft_routed_experts = int32_rows(3, 1, 3, 100);
  chunks[1].draft_routed_experts = int32_rows(1, 1, 3, 109);
  const json ask = {{"text", "x"}, {"return_routed_experts", true}, {"return_draft_routed_experts", true}};
  const auto whole = make_response_builder(generate_call(ask), "id", 0);
  for (const msg::TextOutput& output : chunks) whole->add(0, output);
  const json meta = whole->response()["meta_info"];
  EXPECT_EQ(meta["routed_experts_shape"], json({4, 2, 2}));
  EXPECT_EQ(meta["draft_routed_experts_shape"], json({4, 1, 3}));
  EXPECT_EQ(meta["draft_routed_experts_dtype"], "int32");
  std::vector<int32_t> expected(12);
  for (int32_t i = 0; i < 12; ++i) expected[static_cast<size_t>(i)] = 100 + i;
  EXPECT_EQ(int32_values(base64_decode(meta["draft_routed_experts"].get<std::string>())), expected);
  EXPECT_EQ(decoded_experts(meta), unstreamed_experts());

  json deltas = ask;
  deltas["stream"] = true;
  deltas["stream_routed_experts"] = "delta";
  const auto streamed = make_response_builder(generate_call(deltas), "id", 0);
  const json first = streamed->add(0, chunks[0]).at(0);
  const json last = streamed->add(0, chunks[1]).at(0);
  EXPECT_EQ(first["meta_info"]["draft_routed_experts_shape"], json({3, 1, 3}));
  EXPECT_EQ(last["meta_info"]["draft_routed_experts_shape"], json({1, 1, 3}));
}

TEST(GenerateResponse, EngineFaultsAreNotSilentlyMerged) {
  const auto builder = make_response_builder(generate_call({{"text", "x"}}), "id", 0);
  EXPECT_THROW(builder->add(0, text_output("r", 1, "t", {}, 1, 0)), std::logic_error);  // index past n
  msg::TextOutput done = text_output("r", 0, "t", {5}, 1, 1);
  done.finish_reason = msg::FinishReason{};
  builder->add(0, done);
  EXPECT_THROW(builder->add(0, done), std::logic_error);  // output after the finish
}

}  // namespace
}  // namespace moe::api
