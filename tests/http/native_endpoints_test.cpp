// SGLang's native endpoints over real sockets against the scripted engine: weight updates (the
// answer, its status, the version replies carry after it), abort by rid (the aborted request's own
// client gets its reply), flush_cache, health_generate, tokenize and detokenize, model and server
// info, and /v1/models' max_model_len.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server_fixture.h"

namespace moe::http::test {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

json reply_json(const TestResponse& response) { return json::parse(response.body); }

TEST_F(ServerTest, UpdateWeightsAnswersInSGLangsShapeAndRepliesCarryTheNewVersion) {
  TestClient c = client();
  const std::string one_token = R"({"text": "a", "sampling_params": {"max_new_tokens": 1}})";
  const json before = reply_json(c.request("POST", "/generate", one_token));
  EXPECT_EQ(before["meta_info"]["weight_version"], "default");

  const TestResponse updated = c.request("POST", "/update_weights_from_disk",
                                         R"({"model_path": "/ckpt/step-2", "weight_version": "step-2"})");
  ASSERT_EQ(updated.status, 200) << updated.body;
  EXPECT_EQ(reply_json(updated), json({{"success", true}, {"message", "loaded"}, {"weight_version", "step-2"}}));
  const json after = reply_json(c.request("POST", "/generate", one_token));
  EXPECT_EQ(after["meta_info"]["weight_version"], "step-2");
  const json completion =
      reply_json(c.request("POST", "/v1/completions", R"({"model": "test-model", "prompt": "a", "max_tokens": 1})"));
  EXPECT_EQ(completion["metadata"]["weight_version"], "step-2");  // SGLang's extra field on OpenAI answers
  EXPECT_EQ(reply_json(c.request("GET", "/get_model_info"))["weight_version"], "step-2");
}

TEST_F(ServerTest, AFailedUpdateIsA400AndTheVersionStays) {
  TestClient c = client();
  const TestResponse failed =
      c.request("POST", "/update_weights_from_disk", R"({"model_path": "/broken", "weight_version": "x"})");
  EXPECT_EQ(failed.status, 400);
  EXPECT_EQ(reply_json(failed),
            json({{"success", false}, {"message", "/broken has no config.json"}, {"weight_version", "default"}}));
  const TestResponse no_path = c.request("POST", "/update_weights_from_disk", R"({"weight_version": "x"})");
  EXPECT_EQ(no_path.status, 400);
  EXPECT_EQ(reply_json(no_path)["error"]["param"], "model_path");
  EXPECT_EQ(c.request("GET", "/update_weights_from_disk").status, 405);
}

TEST_F(ServerTest, AbortRequestEndsItAndItsClientGetsTheReply) {
  on_loop([this] { engine_->token_interval = 50ms; });
  TestClient generating = client();
  generating.send("POST", "/generate",
                  R"({"text": "a", "rid": "long-one", "sampling_params": {"max_new_tokens": 1000}})");
  // The request is live once the engine has seen it.
  for (int i = 0; i < 100 && engine_->submitted().empty(); ++i) std::this_thread::sleep_for(10ms);
  const TestResponse aborted = client().request("POST", "/abort_request", R"({"rid": "long-one"})");
  ASSERT_EQ(aborted.status, 200) << aborted.body;
  EXPECT_EQ(reply_json(aborted)["aborted"], 1);
  const json reply = json::parse(generating.read_response().body);
  EXPECT_EQ(reply["meta_info"]["finish_reason"]["type"], "abort");
  EXPECT_EQ(reply_json(client().request("POST", "/abort_request", R"({"rid": "long-one"})"))["aborted"], 0);
  EXPECT_EQ(client().request("POST", "/abort_request", R"({})").status, 400);  // neither rid nor abort_all
}

TEST_F(ServerTest, AbortAllEndsEveryLiveRequest) {
  on_loop([this] { engine_->token_interval = 50ms; });
  TestClient first = client(), second = client();
  first.send("POST", "/generate", R"({"text": "a", "sampling_params": {"max_new_tokens": 1000}})");
  second.send("POST", "/generate", R"({"text": "b", "sampling_params": {"max_new_tokens": 1000}})");
  for (int i = 0; i < 100 && engine_->submitted().size() < 2; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(reply_json(client().request("POST", "/abort_request", R"({"abort_all": true})"))["aborted"], 2);
  EXPECT_EQ(json::parse(first.read_response().body)["meta_info"]["finish_reason"]["type"], "abort");
  EXPECT_EQ(json::parse(second.read_response().body)["meta_info"]["finish_reason"]["type"], "abort");
}

TEST_F(ServerTest, FlushCacheAndHealthGenerate) {
  TestClient c = client();
  const TestResponse flushed = c.request("POST", "/flush_cache");
  EXPECT_EQ(flushed.status, 200);
  EXPECT_EQ(flushed.body.rfind("Cache flushed", 0), 0u) << flushed.body;
  const TestResponse healthy = c.request("GET", "/health_generate");
  EXPECT_EQ(healthy.status, 200) << healthy.body;
  ASSERT_FALSE(engine_->submitted().empty());
  EXPECT_EQ(engine_->submitted().back().sampling.max_new_tokens, 1);  // a real one-token generation
  engine_->shutting_down_ = true;
  EXPECT_EQ(c.request("GET", "/health_generate").status, 503);
}

TEST_F(ServerTest, TokenizeAndDetokenize) {
  TestClient c = client();
  EXPECT_EQ(reply_json(c.request("POST", "/tokenize", R"({"text": "hi"})")),
            json({{"tokens", {104, 105}}, {"count", 2}, {"max_model_len", 4096}}));
  // SGLang's `prompt`, and a list of prompts.
  EXPECT_EQ(reply_json(c.request("POST", "/tokenize", R"({"prompt": ["a", "bc"]})"))["count"], json({1, 2}));
  EXPECT_EQ(reply_json(c.request("POST", "/detokenize", R"({"tokens": [104, 105]})")), json({{"text", "hi"}}));
  EXPECT_EQ(reply_json(c.request("POST", "/detokenize", R"({"tokens": [[97], [98, 99]]})")),
            json({{"text", {"a", "bc"}}}));
  const TestResponse outside = c.request("POST", "/detokenize", R"({"tokens": [[97], [300]]})");
  EXPECT_EQ(outside.status, 400);
  EXPECT_EQ(reply_json(outside)["error"]["param"], "tokens[1]");
  EXPECT_EQ(c.request("POST", "/detokenize", R"({"tokens": [-1]})").status, 400);
  EXPECT_EQ(c.request("POST", "/tokenize", R"({"text": "a", "prompt": "b"})").status, 400);
  // A text the engine refuses is a 400 naming it.
  const TestResponse long_text = c.request("POST", "/tokenize", R"({"text": ["a", "this text is too long"]})");
  EXPECT_EQ(long_text.status, 400);
  EXPECT_EQ(reply_json(long_text)["error"]["param"], "text[1]");
}

// More prompts in one request than --max-batch-prompts (4 here) are refused before any reaches the
// engine: 100,000 of them held the front door for 99 s.
TEST_F(ServerTest, ListsBeyondMaxBatchPromptsAre400BeforeAnyPromptRuns) {
  TestClient c = client();
  const TestResponse generate = c.request("POST", "/generate", R"({"input_ids": [[1], [2], [3], [4], [5]]})");
  EXPECT_EQ(generate.status, 400);
  EXPECT_NE(reply_json(generate)["error"]["message"].get<std::string>().find(
                "the request brings 5 prompts; this server takes at most 4 in one request (--max-batch-prompts)"),
            std::string::npos);
  EXPECT_TRUE(engine_->submitted().empty());
  EXPECT_EQ(c.request("POST", "/v1/completions", R"({"prompt": ["a", "b", "c", "d", "e"]})").status, 400);
  EXPECT_EQ(c.request("POST", "/tokenize", R"({"text": ["a", "b", "c", "d", "e"]})").status, 400);
  EXPECT_EQ(c.request("POST", "/detokenize", R"({"tokens": [[1], [2], [3], [4], [5]]})").status, 400);
  EXPECT_TRUE(engine_->submitted().empty());
  EXPECT_EQ(c.request("POST", "/tokenize", R"({"text": ["a", "b", "c", "d"]})").status, 200);
  EXPECT_EQ(c.request("POST", "/generate", R"({"input_ids": [[1], [2], [3], [4]], "sampling_params": {"max_new_tokens": 1}})").status,
            200);
}

TEST_F(ServerTest, ModelAndServerInfo) {
  TestClient c = client();
  const json model = reply_json(c.request("GET", "/get_model_info"));
  EXPECT_EQ(model["model_path"], "/models/test");
  EXPECT_EQ(model["tokenizer_path"], "/tokenizers/test");
  EXPECT_EQ(model["is_generation"], true);
  EXPECT_EQ(model["num_moe_layers"], 2);
  EXPECT_EQ(model["num_experts"], 64);
  EXPECT_EQ(model["top_k"], 2);
  EXPECT_EQ(reply_json(c.request("GET", "/get_server_info"))["max_total_num_tokens"], 4096);
  EXPECT_EQ(reply_json(c.request("GET", "/v1/models"))["data"][0]["max_model_len"], 4096);
}

}  // namespace
}  // namespace moe::http::test
