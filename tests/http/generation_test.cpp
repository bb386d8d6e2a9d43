// Generation endpoints end to end over real sockets: answers, SSE streams, routing, errors,
// and the abort of a request whose client disconnects.
#include <gtest/gtest.h>

#include <cstring>

#include <nlohmann/json.hpp>

#include "capture/routing_encoding.h"
#include "server_fixture.h"

namespace moe::http::test {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// The payloads of an SSE body, checking its framing: `data: <payload>\n\n` events, [DONE] last.
std::vector<std::string> sse_payloads(const std::string& body) {
  std::vector<std::string> payloads;
  size_t at = 0;
  while (at < body.size()) {
    const size_t end = body.find("\n\n", at);
    EXPECT_NE(end, std::string::npos) << "unterminated event in: " << body;
    if (end == std::string::npos) break;
    const std::string event = body.substr(at, end - at);
    EXPECT_EQ(event.rfind("data: ", 0), 0u) << event;
    payloads.push_back(event.substr(6));
    at = end + 2;
  }
  EXPECT_FALSE(payloads.empty());
  if (!payloads.empty()) {
    EXPECT_EQ(payloads.back(), "[DONE]");
  }
  return payloads;
}

// The expected rows [first, first + count) of `sample` as a flat int32 list.
std::vector<int32_t> expected_rows(int64_t first, int64_t count, int sample, int64_t prompt_tokens) {
  std::vector<int32_t> ids;
  for (int64_t p = first; p < first + count; ++p) {
    for (int layer = 0; layer < ScriptedEngine::kLayers; ++layer) {
      for (int k = 0; k < ScriptedEngine::kTopK; ++k) {
        ids.push_back(ScriptedEngine::expert_at(p, layer, k, sample, prompt_tokens));
      }
    }
  }
  return ids;
}

// "<prefix><i>", built by appending: GCC 12 warns falsely (-Wrestrict) on "literal" + std::string.
std::string numbered(const char* prefix, int i) {
  std::string text = prefix;
  text += std::to_string(i);
  return text;
}

std::vector<int32_t> decoded(const json& object, const std::string& name) {
  const std::string bytes = base64_decode(object[name].get<std::string>());
  std::vector<int32_t> ids(bytes.size() / 4);
  std::memcpy(ids.data(), bytes.data(), bytes.size());
  return ids;
}

TEST_F(ServerTest, GenerateAnswersInSGLangsShape) {
  TestClient c = client();
  const TestResponse response = c.request("POST", "/generate", R"({"text": "abcd", "rid": "g1",
      "sampling_params": {"max_new_tokens": 3}, "return_logprob": true, "return_routed_experts": true})");
  ASSERT_EQ(response.status, 200) << response.body;
  const json body = json::parse(response.body);
  EXPECT_EQ(body["text"], "w0 w1 w2 ");
  EXPECT_EQ(body["output_ids"], json({1000, 1001, 1002}));
  const json& meta = body["meta_info"];
  EXPECT_EQ(meta["id"], "g1");
  EXPECT_EQ(meta["prompt_tokens"], 4);
  EXPECT_EQ(meta["completion_tokens"], 3);
  EXPECT_EQ(meta["finish_reason"], json({{"type", "length"}, {"length", 3}}));
  EXPECT_EQ(meta["output_token_logprobs"], json::parse("[[-0.5, 1000, null], [-1.0, 1001, null], [-1.5, 1002, null]]"));
  EXPECT_EQ(meta["routed_experts_shape"], json({6, 2, 2}));  // P + G - 1 rows
  EXPECT_EQ(meta["routed_experts_dtype"], "int32");
  EXPECT_EQ(decoded(meta, "routed_experts"), expected_rows(0, 6, 0, 4));
  // The engine was asked for raw rows, to be encoded here.
  ASSERT_EQ(engine_->submitted().size(), 1u);
  EXPECT_TRUE(engine_->submitted().front().routing.raw);
}

TEST_F(ServerTest, StreamedGenerateConcatenatesToTheWholeAnswer) {
  TestClient c = client();
  const std::string request = R"({"text": "abc", "sampling_params": {"max_new_tokens": 4},
      "return_routed_experts": true, "stream": true, "stream_routed_experts": "delta"})";
  const TestResponse streamed = c.request("POST", "/generate", request);
  ASSERT_EQ(streamed.status, 200);
  EXPECT_EQ(streamed.headers.at("content-type"), "text/event-stream");
  EXPECT_EQ(streamed.headers.at("transfer-encoding"), "chunked");
  const std::vector<std::string> payloads = sse_payloads(streamed.body);
  ASSERT_EQ(payloads.size(), 5u);  // four tokens, then [DONE]
  std::vector<int32_t> rows;
  for (size_t i = 0; i < 4; ++i) {
    const json event = json::parse(payloads[i]);
    const std::vector<int32_t> chunk = decoded(event["meta_info"], "routed_experts");
    rows.insert(rows.end(), chunk.begin(), chunk.end());
    EXPECT_EQ(event["meta_info"]["finish_reason"].is_null(), i < 3);
  }
  const json last = json::parse(payloads[3]);

  const TestResponse whole = c.request("POST", "/generate", R"({"text": "abc", "sampling_params":
      {"max_new_tokens": 4}, "return_routed_experts": true})");
  const json body = json::parse(whole.body);
  EXPECT_EQ(last["text"], body["text"]);  // SGLang streams the text so far
  EXPECT_EQ(last["output_ids"], body["output_ids"]);
  EXPECT_EQ(rows, decoded(body["meta_info"], "routed_experts"));
  EXPECT_EQ(rows, expected_rows(0, 6, 0, 3));

  // By default (SGLang's convention) only the final event carries rows: all of them.
  const std::vector<std::string> cumulative = sse_payloads(c.request("POST", "/generate", R"({"text": "abc",
      "sampling_params": {"max_new_tokens": 4}, "return_routed_experts": true, "stream": true})").body);
  ASSERT_EQ(cumulative.size(), 5u);
  for (size_t i = 0; i < 3; ++i) EXPECT_FALSE(json::parse(cumulative[i])["meta_info"].contains("routed_experts"));
  EXPECT_EQ(decoded(json::parse(cumulative[3])["meta_info"], "routed_experts"), rows);
}

TEST_F(ServerTest, BatchedGenerateAnswersAList) {
  const TestResponse response = client().request(
      "POST", "/generate", R"({"input_ids": [[1, 2], [3]], "sampling_params": {"max_new_tokens": 1}})");
  const json body = json::parse(response.body);
  ASSERT_TRUE(body.is_array());
  ASSERT_EQ(body.size(), 2u);
  EXPECT_EQ(body[0]["meta_info"]["prompt_tokens"], 2);
  EXPECT_EQ(body[1]["meta_info"]["prompt_tokens"], 1);
  EXPECT_NE(body[0]["meta_info"]["id"], body[1]["meta_info"]["id"]);  // the server named both
}

TEST_F(ServerTest, EngineErrorsKeepTheirStatusAndTheServerGoesOn) {
  TestClient c = client();
  const TestResponse refused = c.request("POST", "/generate", R"({"text": "engine error"})");
  EXPECT_EQ(refused.status, 400);
  EXPECT_EQ(json::parse(refused.body)["error"]["message"], "scripted refusal");

  const TestResponse broken = c.request("POST", "/generate", R"({"text": "fail after one", "stream": true})");
  EXPECT_EQ(broken.status, 200);  // the stream had started
  const std::vector<std::string> payloads = sse_payloads(broken.body);
  ASSERT_EQ(payloads.size(), 3u);
  EXPECT_EQ(json::parse(payloads[0])["text"], "w0 ");
  const json error = json::parse(payloads[1])["error"];
  EXPECT_EQ(error["message"], "scripted engine fault");
  EXPECT_EQ(error["type"], "server_error");
  EXPECT_EQ(c.request("POST", "/generate", R"({"text": "fine", "sampling_params": {"max_new_tokens": 1}})").status,
            200);
}

TEST_F(ServerTest, CompletionSplitsRoutingBetweenPromptAndChoices) {
  const TestResponse response = client().request("POST", "/v1/completions", R"({"model": "test-model",
      "prompt": "abcde", "max_tokens": 3, "n": 2, "return_routed_experts": true, "logprobs": 0})");
  ASSERT_EQ(response.status, 200) << response.body;
  const json body = json::parse(response.body);
  EXPECT_EQ(body["object"], "text_completion");
  EXPECT_EQ(body["model"], "test-model");
  EXPECT_EQ(body["usage"]["prompt_tokens"], 5);
  EXPECT_EQ(body["usage"]["completion_tokens"], 6);
  EXPECT_EQ(body["prompt_routed_experts_shape"], json({5, 2, 2}));
  EXPECT_EQ(decoded(body, "prompt_routed_experts"), expected_rows(0, 5, 0, 5));
  ASSERT_EQ(body["choices"].size(), 2u);
  for (int sample = 0; sample < 2; ++sample) {
    const json& choice = body["choices"][static_cast<size_t>(sample)];
    EXPECT_EQ(choice["text"], "w0 w1 w2 ");
    EXPECT_EQ(choice["finish_reason"], "length");
    EXPECT_EQ(choice["routed_experts_shape"], json({2, 2, 2}));  // G - 1 rows of its own
    EXPECT_EQ(decoded(choice, "routed_experts"), expected_rows(5, 2, sample, 5));
  }
}

TEST_F(ServerTest, ChatListFormAndUnknownModel) {
  TestClient c = client();
  const TestResponse response = c.request("POST", "/v1/chat/completions", R"({"messages": [{"role": "user",
      "content": "hi"}], "max_tokens": 2, "return_routed_experts": true, "routed_experts_format": "list"})");
  ASSERT_EQ(response.status, 200) << response.body;
  const json body = json::parse(response.body);
  EXPECT_EQ(body["object"], "chat.completion");
  EXPECT_EQ(body["choices"][0]["message"], json({{"role", "assistant"}, {"content", "w0 w1 "}}));
  EXPECT_EQ(body["prompt_routed_experts"].size(), 2u);
  EXPECT_EQ(body["prompt_routed_experts"][1][1][0], ScriptedEngine::expert_at(1, 1, 0, 0, 2));
  EXPECT_EQ(body["choices"][0]["routed_experts"], json({{{ScriptedEngine::expert_at(2, 0, 0, 0, 2),
                                                          ScriptedEngine::expert_at(2, 0, 1, 0, 2)},
                                                         {ScriptedEngine::expert_at(2, 1, 0, 0, 2),
                                                          ScriptedEngine::expert_at(2, 1, 1, 0, 2)}}}));

  const TestResponse unknown =
      c.request("POST", "/v1/chat/completions", R"({"model": "gpt-4", "messages": [{"role": "user", "content": "x"}]})");
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(json::parse(unknown.body)["error"]["code"], "model_not_found");
}

TEST_F(ServerTest, ChatStreamSendsRoleContentUsageAndDone) {
  const TestResponse response = client().request("POST", "/v1/chat/completions", R"({"messages": [{"role": "user",
      "content": "hey"}], "max_tokens": 2, "stream": true, "stream_options": {"include_usage": true}})");
  ASSERT_EQ(response.status, 200);
  const std::vector<std::string> payloads = sse_payloads(response.body);
  ASSERT_EQ(payloads.size(), 5u);  // role, "w0 ", "w1 ", usage, [DONE]
  EXPECT_EQ(json::parse(payloads[0])["choices"][0]["delta"]["role"], "assistant");
  std::string text;
  for (size_t i = 1; i < 3; ++i) text += json::parse(payloads[i])["choices"][0]["delta"]["content"].get<std::string>();
  EXPECT_EQ(text, "w0 w1 ");
  EXPECT_EQ(json::parse(payloads[2])["choices"][0]["finish_reason"], "length");
  const json usage = json::parse(payloads[3]);
  EXPECT_EQ(usage["choices"], json::array());
  EXPECT_EQ(usage["usage"]["total_tokens"], 5);
}

TEST_F(ServerTest, ClientLeavingMidStreamAbortsItsRequest) {
  on_loop([this] { engine_->token_interval = 20ms; });
  TestClient c = client();
  c.send("POST", "/generate", R"({"text": "x", "rid": "leaver", "stream": true,
      "sampling_params": {"max_new_tokens": 1000}})");
  const std::string start = c.read_until("data: ");
  EXPECT_NE(start.find("text/event-stream"), std::string::npos) << start;
  c.close();
  ASSERT_TRUE(engine_->wait_for_abort(3s));
  EXPECT_EQ(engine_->aborted(), std::vector<std::string>{"leaver"});
}

TEST_F(ServerTest, ClientLeavingBeforeAWholeAnswerAbortsEveryPrompt) {
  on_loop([this] { engine_->token_interval = 20ms; });
  TestClient c = client();
  c.send("POST", "/v1/completions", R"({"prompt": ["a", "b"], "max_tokens": 1000})");
  for (int i = 0; i < 100 && engine_->submitted().size() < 2; ++i) std::this_thread::sleep_for(10ms);
  c.close();
  ASSERT_TRUE(engine_->wait_for_abort(3s));
  for (int i = 0; i < 100 && engine_->aborted().size() < 2; ++i) std::this_thread::sleep_for(10ms);
  std::vector<std::string> aborted = engine_->aborted();
  std::vector<std::string> submitted;
  for (const msg::GenerateRequest& request : engine_->submitted()) submitted.push_back(request.rid);
  std::sort(aborted.begin(), aborted.end());
  std::sort(submitted.begin(), submitted.end());
  EXPECT_EQ(aborted, submitted);
}

TEST_F(ServerTest, TwoHundredConcurrentClientsAreAllAnswered) {
  on_loop([this] { engine_->token_interval = 5ms; });
  std::vector<std::unique_ptr<TestClient>> clients;
  for (int i = 0; i < 200; ++i) {
    clients.push_back(std::make_unique<TestClient>(server_->port()));
    const json request = {{"text", numbered("p", i)},
                          {"stream", i % 2 == 0},
                          {"rid", numbered("c", i)},
                          {"sampling_params", {{"max_new_tokens", 3}}}};
    clients.back()->send("POST", "/generate", request.dump());
  }
  for (int i = 0; i < 200; ++i) {
    const TestResponse response = clients[static_cast<size_t>(i)]->read_response();
    ASSERT_EQ(response.status, 200) << i;
    const std::string body = i % 2 == 0 ? sse_payloads(response.body).at(2) : response.body;
    EXPECT_EQ(json::parse(body)["text"], "w0 w1 w2 ") << i;
    EXPECT_EQ(json::parse(body)["meta_info"]["id"], numbered("c", i));
  }
  EXPECT_TRUE(engine_->aborted().empty());
}

}  // namespace
}  // namespace moe::http::test
