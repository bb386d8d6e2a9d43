#pragma once
// Test only: an HttpServer on 127.0.0.1 (a free port) with a ScriptedEngine, its io_context run
// by a background thread as the tokenizer actor's loop would be.
#include <gtest/gtest.h>

#include <memory>
#include <thread>

#include <boost/asio/executor_work_guard.hpp>

#include "http/http_server.h"
#include "scripted_engine.h"
#include "test_client.h"

namespace moe::http::test {

// Each test gets a fresh server and engine.
class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  // Small limits so that the limit tests run fast.
  static HttpServerConfig test_config();
  TestClient client() { return TestClient(server_->port()); }
  // Runs `task` on the server's loop and waits for it.
  void on_loop(const std::function<void()>& task);

  boost::asio::io_context io_;
  std::unique_ptr<ScriptedEngine> engine_;
  std::unique_ptr<HttpServer> server_;

 private:
  std::unique_ptr<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
  std::thread loop_;
};

}  // namespace moe::http::test
