// The HTTP layer over real sockets: keep-alive, routing, limits, timeouts, shutdown.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "server_fixture.h"

namespace moe::http::test {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

const std::string kGoodRequest = R"({"text": "ab", "sampling_params": {"max_new_tokens": 2}})";

TEST_F(ServerTest, KeepAliveServesEveryInformationEndpointOnOneConnection) {
  TestClient c = client();
  const TestResponse health = c.request("GET", "/health");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.body, "");
  const TestResponse models = c.request("GET", "/v1/models");
  EXPECT_EQ(models.status, 200);
  EXPECT_EQ(models.headers.at("content-type"), "application/json");
  EXPECT_EQ(json::parse(models.body)["data"][0]["id"], "test-model");
  const TestResponse metrics = c.request("GET", "/metrics?format=text");  // a query does not change the path
  EXPECT_EQ(metrics.status, 200);
  EXPECT_EQ(metrics.headers.at("content-type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_NE(metrics.body.find("moe_kv_slots_total{model_name=\"test-model\"} 4096\n"), std::string::npos);
  const TestResponse load = c.request("GET", "/expert_load");
  EXPECT_EQ(json::parse(load.body)["counts"], json::parse("[[5, 0, 1], [2, 2, 2]]"));
  EXPECT_EQ(c.request("POST", "/generate", kGoodRequest).status, 200);
  EXPECT_NE(c.request("GET", "/metrics").body.find("moe_requests_total{model_name=\"test-model\"} 1\n"),
            std::string::npos);
}

TEST_F(ServerTest, ExpertLoadResetIsAPostThatAnswersTheCountsItZeroes) {
  TestClient c = client();
  EXPECT_EQ(c.request("GET", "/expert_load/reset").status, 405);
  const TestResponse reset = c.request("POST", "/expert_load/reset");
  EXPECT_EQ(reset.status, 200);
  EXPECT_EQ(json::parse(reset.body)["counts"], json::parse("[[5, 0, 1], [2, 2, 2]]"));
  const json after = json::parse(c.request("GET", "/expert_load").body);
  EXPECT_EQ(after["counts"], json::parse("[[0, 0, 0], [0, 0, 0]]"));
  EXPECT_EQ(after["tokens"], 0);
}

TEST_F(ServerTest, UnknownPathIs404AndWrongMethodIs405WithoutLosingTheConnection) {
  TestClient c = client();
  const TestResponse missing = c.request("GET", "/v2/anything");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(json::parse(missing.body)["error"]["type"], "not_found_error");
  const TestResponse wrong = c.request("GET", "/generate");
  EXPECT_EQ(wrong.status, 405);
  EXPECT_EQ(wrong.headers.at("allow"), "POST");
  EXPECT_EQ(json::parse(wrong.body)["error"]["message"], "use POST for /generate");
  EXPECT_EQ(c.request("GET", "/health").status, 200);
}

TEST_F(ServerTest, MalformedJsonIs400AndTheNextRequestSucceeds) {
  TestClient c = client();
  const TestResponse bad = c.request("POST", "/generate", "{\"text\": ");
  EXPECT_EQ(bad.status, 400);
  const json error = json::parse(bad.body)["error"];
  EXPECT_EQ(error["type"], "invalid_request_error");
  EXPECT_NE(error["message"].get<std::string>().find("not valid JSON"), std::string::npos);
  EXPECT_EQ(c.request("POST", "/generate", kGoodRequest).status, 200);
  const TestResponse invalid = c.request("POST", "/v1/completions", R"({"prompt": "x", "temperature": "hot"})");
  EXPECT_EQ(invalid.status, 400);
  EXPECT_EQ(json::parse(invalid.body)["error"]["param"], "temperature");
  EXPECT_EQ(c.request("POST", "/v1/completions", R"({"prompt": "x"})").status, 200);
}

TEST_F(ServerTest, OversizedBodyIs413AndTheConnectionCloses) {
  TestClient declared = client();
  declared.send("POST", "/generate", std::string(5000, ' '));
  EXPECT_EQ(declared.read_response().status, 413);
  EXPECT_TRUE(declared.closed_by_server(2s));

  // A chunked body has no length up front: it is refused when it grows past the limit.
  TestClient chunked = client();
  chunked.send_raw("POST /generate HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
  const std::string piece(1000, 'x');
  for (int i = 0; i < 5; ++i) chunked.send_raw("3e8\r\n" + piece + "\r\n");
  EXPECT_EQ(chunked.read_response().status, 413);
  EXPECT_TRUE(chunked.closed_by_server(2s));
  EXPECT_EQ(client().request("GET", "/health").status, 200);  // the server goes on
}

// A chunked body may end with trailer fields: they are read and the request served; trailer fields
// past the connection's read buffer (128 KiB) are answered 400 at once (they used to be buffered
// until the request timeout).
TEST_F(ServerTest, ChunkedBodyWithTrailers) {
  const std::string head = "POST /generate HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTrailer: X-Note\r\n\r\n";
  const std::string body = std::string(kGoodRequest);
  std::ostringstream size;
  size << std::hex << body.size();
  const std::string chunked = head + size.str() + "\r\n" + body + "\r\n0\r\n";
  for (const size_t trailer : {4, 20000}) {
    TestClient c = client();
    c.send_raw(chunked + "X-Note: " + std::string(trailer, 'n') + "\r\n\r\n");
    EXPECT_EQ(c.read_response().status, 200) << trailer;
  }
  TestClient large = client();
  const auto started = std::chrono::steady_clock::now();
  large.send_raw(chunked + "X-Note: " + std::string(200000, 'n'));
  const TestResponse refused = large.read_response();
  EXPECT_EQ(refused.status, 400);
  EXPECT_NE(refused.body.find("buffer overflow"), std::string::npos) << refused.body;
  EXPECT_LT(std::chrono::steady_clock::now() - started, 2s);
  EXPECT_TRUE(large.closed_by_server(2s));
  EXPECT_EQ(client().request("GET", "/health").status, 200);
}

TEST_F(ServerTest, GarbageIsAnswered400AndClosed) {
  TestClient c = client();
  c.send_raw("HELLO THERE\r\n\r\n");
  const TestResponse response = c.read_response();
  EXPECT_EQ(response.status, 400);
  EXPECT_NE(json::parse(response.body)["error"]["message"].get<std::string>().find("malformed HTTP"),
            std::string::npos);
  EXPECT_TRUE(c.closed_by_server(2s));
}

TEST_F(ServerTest, IdleAndSlowClientsAreClosed) {
  TestClient silent = client();
  EXPECT_TRUE(silent.closed_by_server(3s));

  TestClient kept_alive = client();
  EXPECT_EQ(kept_alive.request("GET", "/health").status, 200);
  EXPECT_TRUE(kept_alive.closed_by_server(3s));

  // Announces 100 bytes of body, sends 10, then stalls.
  TestClient slow = client();
  slow.send_raw("POST /generate HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789");
  EXPECT_TRUE(slow.closed_by_server(3s));
}

TEST_F(ServerTest, Http10GetsItsAnswerThenTheClose) {
  TestClient c = client();
  c.send_raw("GET /health HTTP/1.0\r\n\r\n");
  EXPECT_EQ(c.read_response().status, 200);
  EXPECT_TRUE(c.closed_by_server(2s));
}

TEST_F(ServerTest, ShuttingDownAnswers503ButStillReports) {
  engine_->shutting_down_ = true;
  TestClient c = client();
  const TestResponse generate = c.request("POST", "/generate", kGoodRequest);
  EXPECT_EQ(generate.status, 503);
  EXPECT_EQ(json::parse(generate.body)["error"]["type"], "service_unavailable_error");
  EXPECT_EQ(c.request("POST", "/v1/chat/completions", "{}").status, 503);
  EXPECT_EQ(c.request("GET", "/health").status, 503);
  EXPECT_EQ(c.request("GET", "/metrics").status, 200);
  EXPECT_TRUE(engine_->submitted().empty());
}

TEST_F(ServerTest, CurlWithExpectContinueIsServed) {
  if (std::system("curl --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "curl is not installed";
  const std::string dir = ::testing::TempDir();
  const std::string body_path = dir + "/http_test_body.json";
  const std::string out_path = dir + "/http_test_out.json";
  // A long rid makes the body 2 KiB; curl then waits for 100 Continue before sending it.
  std::ofstream(body_path) << R"({"text": "hello", "sampling_params": {"max_new_tokens": 2}, "rid": ")"
                           << std::string(2048, 'p') << "\"}";
  const std::string command = "curl -s -H 'Expect: 100-continue' -H 'Content-Type: application/json' --data-binary @" +
                              body_path + " -o " + out_path + " -w '%{http_code}' http://127.0.0.1:" +
                              std::to_string(server_->port()) + "/generate > " + dir + "/http_test_code";
  ASSERT_EQ(std::system(command.c_str()), 0);
  std::string code;
  std::ifstream(dir + "/http_test_code") >> code;
  EXPECT_EQ(code, "200");
  const json body = json::parse(std::ifstream(out_path));
  EXPECT_EQ(body["text"], "w0 w1 ");
  EXPECT_EQ(body["meta_info"]["prompt_tokens"], 5);
}

TEST_F(ServerTest, StopClosesConnectionsAndAbortsTheirRequests) {
  on_loop([this] { engine_->token_interval = 50ms; });
  TestClient c = client();
  c.send("POST", "/generate", R"({"text": "x", "rid": "held", "sampling_params": {"max_new_tokens": 1000}})");
  // The request is in the engine once it was submitted.
  for (int i = 0; i < 100 && engine_->submitted().empty(); ++i) std::this_thread::sleep_for(10ms);
  on_loop([this] { server_->stop(); });
  EXPECT_TRUE(c.closed_by_server(2s));
  EXPECT_EQ(engine_->aborted(), std::vector<std::string>{"held"});
}

}  // namespace
}  // namespace moe::http::test
