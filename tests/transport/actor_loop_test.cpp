#include "transport/actor_loop.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "common/error.h"
#include "transport/endpoints.h"
#include "transport/message_codec.h"
#include "transport/ready_barrier.h"
#include "expect_error.h"
#include "transport_fixture.h"

namespace moe::transport {
namespace {

using test::arrives;
using test::TransportTest;
using Clock = std::chrono::steady_clock;

TEST_P(TransportTest, StopReturnsPromptly) {
  ActorLoop loop(context_, "idle");
  loop.make<Inbox>(bind_address("idle"), [](msg::Message&&) {});
  loop.start();
  std::promise<void> running;
  loop.post([&] { running.set_value(); });
  auto future = running.get_future();
  ASSERT_TRUE(arrives(future));

  const auto begin = Clock::now();
  loop.stop();
  loop.join();
  EXPECT_LT(Clock::now() - begin, std::chrono::milliseconds(200));
}

TEST_P(TransportTest, BadFramesAndFailingHandlersDoNotStopAnInbox) {
  std::vector<uint64_t> handled;
  std::promise<void> last_handled;
  ActorLoop receiver(context_, "receiver");
  ActorLoop sender(context_, "sender");
  auto& inbox = receiver.make<Inbox>(bind_address("inbox"), [&](msg::Message&& message) {
    const uint64_t id = std::get<msg::Heartbeat>(message).instance;
    handled.push_back(id);
    if (id == 2) last_handled.set_value();
    if (id == 1) throw Error("handler failed on purpose");
  });
  auto& raw = sender.make<AsyncSocket>(SocketKind::Push);
  raw.connect(inbox.endpoint());
  raw.send({"\xc1 not msgpack"});
  raw.send({encode_message(msg::Heartbeat{.instance = 9}), "a second frame"});
  raw.send({encode_message(msg::Heartbeat{.instance = 1})});
  raw.send({encode_message(msg::Heartbeat{.instance = 2})});
  receiver.start();
  sender.start();

  auto future = last_handled.get_future();
  ASSERT_TRUE(arrives(future));
  receiver.stop();
  receiver.join();
  EXPECT_EQ(handled, (std::vector<uint64_t>{1, 2}));
}

TEST_P(TransportTest, AnExceptionEscapingAPostedTaskIsLoggedAndTheLoopGoesOn) {
  ActorLoop loop(context_, "actor");
  std::promise<void> after;
  loop.post([] { throw Error("task failed on purpose"); });
  loop.post([&] { after.set_value(); });
  loop.start();
  auto future = after.get_future();
  EXPECT_TRUE(arrives(future));
}

TEST_P(TransportTest, LauncherWaitsUntilEveryActorIsReady) {
  ReadyBarrier barrier(context_, bind_address("launcher"));
  std::vector<std::unique_ptr<ActorLoop>> actors;
  for (const char* name : {"tokenizer", "scheduler", "detokenizer"}) {
    actors.push_back(std::make_unique<ActorLoop>(context_, name));
    actors.back()->report_ready(barrier.endpoint());
    actors.back()->start();
  }
  const std::vector<msg::Ready> reports = barrier.wait({"scheduler", "tokenizer", "detokenizer"}, std::chrono::seconds(20));
  ASSERT_EQ(reports.size(), 3u);
  EXPECT_EQ(reports[0].actor, "scheduler");
  EXPECT_EQ(reports[1].actor, "tokenizer");
  EXPECT_EQ(reports[2].actor, "detokenizer");
  for (const msg::Ready& report : reports) EXPECT_EQ(report.pid, ::getpid());

  test::expect_error_containing([&] { barrier.wait({"tokenizer", "model-worker"}, std::chrono::milliseconds(100)); },
                                "actors not ready after 100 ms: model-worker");
}

}  // namespace
}  // namespace moe::transport
