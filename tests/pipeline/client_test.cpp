// The C++ ZeroMQ client itself: replies matched to their requests by rid when many share one
// socket, errors delivered as RequestError to the request that caused them, n completions ordered
// by index, and a bounded wait when no server answers.
#include <gtest/gtest.h>

#include <future>

#include "moe/client.h"
#include "pipeline_harness.h"

namespace moe::testing {
namespace {

TEST(ZmqClient, ErrorGoesToItsRequestAndOthersOnTheSameSocketSucceed) {
  const Golden golden = load_golden("qwen3-moe-tiny");
  actors::EngineRuntime runtime(tiny_serve_options());
  Client client(runtime.client_endpoint());
  msg::GenerateRequest bad = golden_request(golden, golden.cases[0], "bad");
  bad.sampling.temperature = -1;
  std::promise<std::exception_ptr> bad_done;
  client.submit(bad, [](const msg::TextOutput&) { ADD_FAILURE() << "output for a refused request"; },
                [&](std::exception_ptr error) { bad_done.set_value(error); });
  const auto good = client.generate(golden_request(golden, golden.cases[4], "good"));
  expect_golden_reply(golden, golden.cases[4], join_reply(good));

  const std::exception_ptr error = bad_done.get_future().get();
  ASSERT_TRUE(error);
  try {
    std::rethrow_exception(error);
  } catch (const RequestError& e) {
    EXPECT_EQ(e.reply().rid, "bad");
    EXPECT_EQ(e.reply().code, 400);
    EXPECT_NE(std::string(e.what()).find("temperature"), std::string::npos) << e.what();
  }
  EXPECT_THROW(client.generate(bad), RequestError);
}

TEST(ZmqClient, ThreeCompletionsComeBackOrderedByIndex) {
  const Golden golden = load_golden("qwen3-moe-tiny");
  actors::EngineRuntime runtime(tiny_serve_options());
  Client client(runtime.client_endpoint());
  msg::GenerateRequest request = golden_request(golden, golden.cases[2], "");
  request.sampling.n = 3;
  const auto outputs = client.generate(request);
  ASSERT_EQ(outputs.size(), 3u);
  for (int32_t i = 0; i < 3; ++i) {
    EXPECT_EQ(outputs[i].index, i);
    EXPECT_EQ(outputs[i].rid, outputs[0].rid);
    expect_golden_reply(golden, golden.cases[2], join_reply({outputs[i]}));
  }
}

TEST(ZmqClient, NoServerMeansATimeoutErrorNotAHang) {
  Client client("tcp://127.0.0.1:1");  // nothing listens on port 1
  msg::GenerateRequest request;
  request.text = "hello";
  try {
    client.generate(request, std::chrono::milliseconds(300));
    FAIL() << "expected a timeout";
  } catch (const RequestError& e) {
    EXPECT_EQ(e.reply().code, 504);
  }
}

}  // namespace
}  // namespace moe::testing
