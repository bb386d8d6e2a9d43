#include "server_fixture.h"

#include <future>

#include <boost/asio/post.hpp>

namespace moe::http::test {

HttpServerConfig ServerTest::test_config() {
  HttpServerConfig config;
  config.host = "127.0.0.1";
  config.port = 0;
  config.max_body_bytes = 4096;
  config.max_batch_prompts = 4;
  config.idle_timeout = std::chrono::milliseconds(300);
  config.request_timeout = std::chrono::milliseconds(300);
  config.write_timeout = std::chrono::milliseconds(1000);
  config.close_linger = std::chrono::milliseconds(200);
  return config;
}

void ServerTest::SetUp() {
  engine_ = std::make_unique<ScriptedEngine>(io_);
  server_ = std::make_unique<HttpServer>(io_, *engine_, test_config());
  work_ = std::make_unique<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>>(
      io_.get_executor());
  loop_ = std::thread([this] { io_.run(); });
}

void ServerTest::TearDown() {
  on_loop([this] { server_->stop(); });
  work_.reset();
  io_.stop();
  loop_.join();
  server_.reset();
  engine_.reset();
}

void ServerTest::on_loop(const std::function<void()>& task) {
  std::promise<void> done;
  boost::asio::post(io_, [&] {
    task();
    done.set_value();
  });
  done.get_future().wait();
}

}  // namespace moe::http::test
