// The embedding API: moe::Engine's async_generate with each kind of Asio completion token (a
// callback, use_future, use_awaitable) gives the golden output; the streamed variant's chunks add
// up to it and arrive on the awaiting coroutine's thread; a refused request throws RequestError.
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp needs std::exchange

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <future>
#include <thread>

#include "moe/engine.h"
#include "pipeline_harness.h"

namespace moe::testing {
namespace {

class EngineApi : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    golden_ = new Golden(load_golden("qwen3-moe-tiny"));
    EngineOptions options;
    options.model_path = golden_->model_dir;
    options.tokenizer_path = std::string(MOE_TEST_DATA_DIR) + "/qwen3-tokenizer";
    options.enable_return_routed_experts = true;
    options.max_total_tokens = 2048;
    engine_ = new Engine(options);
  }
  static void TearDownTestSuite() {
    delete engine_;
    delete golden_;
  }
  static msg::GenerateRequest request_for(size_t case_index) {
    return golden_request(*golden_, golden_->cases[case_index], "");
  }
  static void expect_golden(size_t case_index, const std::vector<msg::TextOutput>& outputs) {
    SCOPED_TRACE("case " + std::to_string(case_index));
    ASSERT_EQ(outputs.size(), 1u);
    expect_golden_reply(*golden_, golden_->cases[case_index], join_reply(outputs));
  }

  static Golden* golden_;
  static Engine* engine_;
};
Golden* EngineApi::golden_ = nullptr;
Engine* EngineApi::engine_ = nullptr;

TEST_F(EngineApi, CallbackToken) {
  std::promise<std::vector<msg::TextOutput>> result;
  engine_->async_generate(request_for(3), [&](std::exception_ptr error, std::vector<msg::TextOutput> outputs) {
    error ? result.set_exception(error) : result.set_value(std::move(outputs));
  });
  auto future = result.get_future();
  ASSERT_EQ(future.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  expect_golden(3, future.get());
}

TEST_F(EngineApi, FutureTokenForEveryCaseAtOnce) {
  std::vector<std::future<std::vector<msg::TextOutput>>> futures;
  for (size_t i = 0; i < golden_->cases.size(); ++i)
    futures.push_back(engine_->async_generate(request_for(i), boost::asio::use_future));
  for (size_t i = 0; i < futures.size(); ++i) {
    ASSERT_EQ(futures[i].wait_for(std::chrono::seconds(30)), std::future_status::ready);
    expect_golden(i, futures[i].get());
  }
}

TEST_F(EngineApi, CoroutineTokenAndStreamOnTheCoroutinesThread) {
  boost::asio::io_context io;
  std::vector<msg::TextOutput> whole, chunks;
  bool chunks_on_io_thread = true;
  const std::thread::id io_thread = std::this_thread::get_id();  // io.run() below runs here
  boost::asio::co_spawn(
      io,
      [&]() -> boost::asio::awaitable<void> {
        whole = co_await engine_->async_generate(request_for(5), boost::asio::use_awaitable);
        co_await engine_->async_generate_stream(
            request_for(5),
            [&](const msg::TextOutput& chunk) {
              chunks_on_io_thread = chunks_on_io_thread && std::this_thread::get_id() == io_thread;
              chunks.push_back(chunk);
            },
            boost::asio::use_awaitable);
      },
      [](std::exception_ptr error) {
        if (error) std::rethrow_exception(error);
      });
  io.run();
  expect_golden(5, whole);
  EXPECT_EQ(chunks.size(), static_cast<size_t>(golden_->max_new_tokens));
  EXPECT_TRUE(chunks_on_io_thread);
  const JoinedReply streamed = join_reply(chunks);
  const JoinedReply joined_whole = join_reply(whole);
  EXPECT_EQ(streamed.ids, joined_whole.ids);
  EXPECT_EQ(streamed.text, joined_whole.text);
  EXPECT_EQ(streamed.rows, joined_whole.rows);
  expect_golden_reply(*golden_, golden_->cases[5], streamed);
}

TEST_F(EngineApi, RefusedRequestThrowsRequestErrorThroughEachToken) {
  msg::GenerateRequest bad = request_for(0);
  bad.sampling.top_p = 2.0f;
  auto future = engine_->async_generate(bad, boost::asio::use_future);
  try {
    future.get();
    FAIL() << "expected a RequestError";
  } catch (const RequestError& e) {
    EXPECT_EQ(e.reply().code, 400);
    EXPECT_NE(std::string(e.what()).find("top_p"), std::string::npos) << e.what();
  }
  boost::asio::io_context io;
  std::string message;
  boost::asio::co_spawn(
      io,
      [&]() -> boost::asio::awaitable<void> {
        try {
          co_await engine_->async_generate_stream(bad, [](const msg::TextOutput&) {}, boost::asio::use_awaitable);
        } catch (const RequestError& e) {
          message = e.what();
        }
      },
      [](std::exception_ptr error) {
        if (error) std::rethrow_exception(error);
      });
  io.run();
  EXPECT_NE(message.find("top_p"), std::string::npos) << message;
}

// Its own engine: destroying an engine with a request in flight fails that request's future
// instead of leaving it waiting forever.
TEST(EngineShutdown, DestroyingTheEngineFailsRequestsInFlight) {
  const Golden golden = load_golden("qwen3-moe-tiny");
  EngineOptions options;
  options.model_path = golden.model_dir;
  options.tokenizer_path = std::string(MOE_TEST_DATA_DIR) + "/qwen3-tokenizer";
  auto engine = std::make_unique<Engine>(options);
  msg::GenerateRequest long_request = golden_request(golden, golden.cases[1], "long");  // case 1 runs 4000 tokens in the vocabulary
  long_request.routing.return_routed_experts = false;
  long_request.sampling.max_new_tokens = 4000;
  auto future = engine->async_generate(long_request, boost::asio::use_future);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  engine.reset();
  ASSERT_EQ(future.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  try {
    future.get();
    FAIL() << "a 4000-token request finished within 50 ms";
  } catch (const RequestError& e) {
    EXPECT_EQ(e.reply().code, 503);
  }
}

}  // namespace
}  // namespace moe::testing
