// Real sockets between two event loops on two threads, over inproc, ipc and tcp.
#include <gtest/gtest.h>

#include <atomic>
#include <numeric>

#include "transport/actor_loop.h"
#include "transport/endpoints.h"
#include "transport/message_codec.h"
#include "transport_fixture.h"

namespace moe::transport {
namespace {

using test::arrives;
using test::TransportTest;

// A payload of `size` bytes that starts with its sequence number, so order can be checked.
std::string numbered_payload(int number, size_t size) {
  std::string payload = std::to_string(number) + ":";
  payload.resize(size, static_cast<char>('a' + number % 26));
  return payload;
}

int number_of(const std::string& payload) { return std::stoi(payload.substr(0, payload.find(':'))); }

TEST_P(TransportTest, PushPullDeliversTenThousandMessagesInOrder) {
  constexpr uint64_t kCount = 10000;
  std::vector<uint64_t> received;
  std::promise<void> all_received;
  ActorLoop receiver(context_, "receiver");
  ActorLoop sender(context_, "sender");

  auto& inbox = receiver.make<Inbox>(bind_address("pipeline"), [&](msg::Message&& message) {
    received.push_back(std::get<msg::Heartbeat>(message).instance);
    if (received.size() == kCount) all_received.set_value();
  });
  auto& outbox = sender.make<Outbox>(inbox.endpoint());
  sender.post([&] {
    for (uint64_t i = 0; i < kCount; ++i) outbox.send(msg::Heartbeat{.instance = i});
  });
  receiver.start();
  sender.start();

  auto future = all_received.get_future();
  ASSERT_TRUE(arrives(future)) << "received " << received.size() << " of " << kCount;
  receiver.stop();
  receiver.join();
  std::vector<uint64_t> expected(kCount);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(received, expected);
}

// A pipeline stage computes inside its receive handler and sends the result on: the result must
// leave while the handler still runs (the stage may go on to the next batch at once), not when the
// loop next turns. The handler here waits for its own message to arrive downstream.
TEST_P(TransportTest, AMessageSentFromAHandlerLeavesWhileTheHandlerStillRuns) {
  std::promise<void> warmed_up, forwarded, handler_done;  // before the loops: they outlive them
  auto forwarded_future = forwarded.get_future();
  std::atomic<bool> arrived_in_time{false};
  ActorLoop downstream(context_, "downstream");
  ActorLoop stage(context_, "stage");
  ActorLoop feeder(context_, "feeder");
  auto& sink = downstream.make<Inbox>(bind_address("sink"), [&](msg::Message&& message) {
    const uint64_t instance = std::get<msg::Heartbeat>(message).instance;
    (instance == 0 ? warmed_up : forwarded).set_value();
  });
  auto& next = stage.make<Outbox>(sink.endpoint());
  auto& inbox = stage.make<Inbox>(bind_address("stage"), [&](msg::Message&&) {
    next.send(msg::Heartbeat{.instance = 1});
    arrived_in_time = arrives(forwarded_future, std::chrono::seconds(5));
    handler_done.set_value();
  });
  auto& feed = feeder.make<Outbox>(inbox.endpoint());
  downstream.start();
  stage.start();
  feeder.start();
  // Connected first (a send to a peer not yet connected has to wait for the pump, rightly).
  stage.post([&] { next.send(msg::Heartbeat{.instance = 0}); });
  auto warm = warmed_up.get_future();
  ASSERT_TRUE(arrives(warm));
  feeder.post([&] { feed.send(msg::Heartbeat{.instance = 7}); });
  auto done = handler_done.get_future();
  ASSERT_TRUE(arrives(done));
  EXPECT_TRUE(arrived_in_time) << "the forwarded message waited for the handler to return";
}

TEST_P(TransportTest, RouterAnswersSeveralDealersEachInOrder) {
  constexpr int kDealers = 5;
  constexpr int kRequestsEach = 200;
  std::vector<std::vector<std::string>> replies(kDealers);
  std::atomic<int> total{0};
  std::promise<void> all_answered;
  ActorLoop server(context_, "server");
  ActorLoop clients(context_, "clients");

  RouterEndpoint* router = nullptr;
  router = &server.make<RouterEndpoint>(
      bind_address("clients"), [&router](ClientAddress client, std::string payload) { router->reply(client, payload + "!"); },
      [](const ClientAddress&) {});
  std::vector<DealerEndpoint*> dealers;
  for (int d = 0; d < kDealers; ++d) {
    dealers.push_back(&clients.make<DealerEndpoint>(router->endpoint(), [&, d](std::string payload) {
      replies[d].push_back(std::move(payload));
      if (++total == kDealers * kRequestsEach) all_answered.set_value();
    }));
  }
  clients.post([&] {
    for (int i = 0; i < kRequestsEach; ++i) {
      for (int d = 0; d < kDealers; ++d) dealers[d]->send("dealer" + std::to_string(d) + "#" + std::to_string(i));
    }
  });
  server.start();
  clients.start();

  auto future = all_answered.get_future();
  ASSERT_TRUE(arrives(future)) << "answered " << total << " of " << kDealers * kRequestsEach;
  clients.stop();
  clients.join();
  for (int d = 0; d < kDealers; ++d) {
    ASSERT_EQ(replies[d].size(), static_cast<size_t>(kRequestsEach));
    for (int i = 0; i < kRequestsEach; ++i) {
      EXPECT_EQ(replies[d][i], "dealer" + std::to_string(d) + "#" + std::to_string(i) + "!");
    }
  }
}

TEST_P(TransportTest, BurstBeyondTheHighWaterMarkIsDeliveredWhole) {
  // 2000 × 16 KiB overflows ZeroMQ's queues (8 messages each way) and the kernel's socket buffers,
  // so the sender must park messages and resume only when ZMQ_FD signals room again.
  constexpr int kBurst = 2000;
  constexpr size_t kSize = 16 * 1024;
  const SocketOptions small_queues{.send_high_water_mark = 8, .receive_high_water_mark = 8};
  std::vector<std::string> received;
  std::promise<void> all_received;
  std::promise<size_t> parked_after_first_flush;
  ActorLoop receiver(context_, "receiver");
  ActorLoop sender(context_, "sender");

  AsyncSocket& pull = receiver.make<AsyncSocket>(SocketKind::Pull, small_queues);
  const std::string endpoint = pull.bind(bind_address("burst"));
  pull.on_receive([&](Multipart&& message) {
    received.push_back(std::move(message.front()));
    if (received.size() == kBurst) all_received.set_value();
  });
  AsyncSocket& push = sender.make<AsyncSocket>(SocketKind::Push, small_queues);
  push.connect(endpoint);
  sender.post([&] {
    for (int i = 0; i < kBurst; ++i) push.send({numbered_payload(i, kSize)});
    // Queued after the socket's own flush, so this sees what could not be sent yet.
    sender.post([&] { parked_after_first_flush.set_value(push.queued_messages()); });
  });
  sender.start();
  auto parked = parked_after_first_flush.get_future();
  ASSERT_TRUE(arrives(parked));
  EXPECT_GT(parked.get(), 0u) << "the burst never exceeded the high-water mark";

  receiver.start();  // only now does anything drain
  auto future = all_received.get_future();
  const bool complete = arrives(future);
  receiver.stop();
  receiver.join();  // `received` is the receiver's until its loop has ended, even when this failed
  ASSERT_TRUE(complete) << "received " << received.size() << " of " << kBurst;
  for (int i = 0; i < kBurst; ++i) {
    ASSERT_EQ(number_of(received[i]), i);
    ASSERT_EQ(received[i].size(), kSize);
  }
}

TEST_P(TransportTest, RouterKeepsServingOthersWhileOneClientStopsReading) {
  constexpr int kBurst = 2000;
  constexpr size_t kSize = 16 * 1024;
  constexpr int kFastRequests = 50;
  const SocketOptions small_queues{.send_high_water_mark = 8, .receive_high_water_mark = 8};
  std::vector<std::string> slow_received;
  std::promise<void> release_slow;
  std::shared_future<void> released = release_slow.get_future().share();
  std::promise<void> slow_done;
  std::atomic<int> fast_replies{0};  // counted by the fast client's loop, read here on failure
  std::promise<void> fast_done;
  ActorLoop server(context_, "server");
  ActorLoop slow_client(context_, "slow");
  ActorLoop fast_client(context_, "fast");

  RouterEndpoint* router = nullptr;
  router = &server.make<RouterEndpoint>(
      bind_address("clients"),
      [&router](ClientAddress client, std::string payload) {
        if (payload != "burst please") return router->reply(client, "ok");
        for (int i = 0; i < kBurst; ++i) router->reply(client, numbered_payload(i, kSize));
      },
      [](const ClientAddress&) {}, small_queues);
  auto& slow = slow_client.make<DealerEndpoint>(
      router->endpoint(),
      [&](std::string payload) {
        if (slow_received.empty()) released.wait();  // a client that stops reading for a while
        slow_received.push_back(std::move(payload));
        if (slow_received.size() == kBurst) slow_done.set_value();
      },
      small_queues);
  auto& fast = fast_client.make<DealerEndpoint>(router->endpoint(), [&](std::string payload) {
    EXPECT_EQ(payload, "ok");
    if (++fast_replies == kFastRequests) fast_done.set_value();
  });
  slow.send("burst please");
  for (int i = 0; i < kFastRequests; ++i) fast.send("ping");
  server.start();
  slow_client.start();
  fast_client.start();

  auto fast_future = fast_done.get_future();
  EXPECT_TRUE(arrives(fast_future)) << "a stalled client blocked the others: " << fast_replies.load() << " replies";
  release_slow.set_value();
  auto slow_future = slow_done.get_future();
  const bool slow_complete = arrives(slow_future);
  slow_client.stop();
  slow_client.join();  // `slow_received` is the slow client's until its loop has ended
  ASSERT_TRUE(slow_complete) << "the slow client got " << slow_received.size() << " of " << kBurst;
  for (int i = 0; i < kBurst; ++i) ASSERT_EQ(number_of(slow_received[i]), i);
}

// A ROUTER on its own loop whose one client (on another loop) has sent a request; the first peer
// the ROUTER reports gone.
struct RouterWithOneClient {
  RouterWithOneClient(Context& context, const std::string& bind_address)
      : server(context, "server"), client(std::make_unique<ActorLoop>(context, "client")) {
    router = &server.make<RouterEndpoint>(
        bind_address, [this](ClientAddress address, std::string) { request_seen.set_value(address); },
        [this](const ClientAddress& address) {
          if (!gone_reported) gone.set_value(address);
          gone_reported = true;
        });
    client->make<DealerEndpoint>(router->endpoint(), [](std::string) {}).send("hello");
    server.start();
    client->start();
  }

  std::promise<ClientAddress> request_seen;
  std::promise<ClientAddress> gone;
  bool gone_reported = false;
  ActorLoop server;  // stopped before the promises its handlers fulfil are destroyed
  std::unique_ptr<ActorLoop> client;
  RouterEndpoint* router = nullptr;
};

TEST_P(TransportTest, ReplyToADisconnectedClientReportsItGone) {
  RouterWithOneClient setup(context_, bind_address("clients"));
  auto seen = setup.request_seen.get_future();
  ASSERT_TRUE(arrives(seen));
  const ClientAddress address = seen.get();
  setup.client.reset();  // the client's socket closes

  // The server learns of the disconnect asynchronously; keep replying until a reply bounces (or,
  // over tcp:// and ipc://, the closed connection is reported first).
  auto gone_future = setup.gone.get_future();
  for (int attempt = 0; attempt < 500 && gone_future.wait_for(std::chrono::milliseconds(10)) != std::future_status::ready;
       ++attempt) {
    setup.server.post([router = setup.router, address] { router->reply(address, "late reply"); });
  }
  ASSERT_TRUE(arrives(gone_future, std::chrono::seconds(1)));
  EXPECT_TRUE(gone_future.get().same_peer(address));
}

TEST_P(TransportTest, AClientThatClosesItsSocketIsReportedGoneWithoutAnyReply) {
  if (GetParam() == "inproc") GTEST_SKIP() << "inproc has no connections to watch (both ends in one process)";
  RouterWithOneClient setup(context_, bind_address("clients"));
  auto seen = setup.request_seen.get_future();
  ASSERT_TRUE(arrives(seen));
  const ClientAddress address = seen.get();
  setup.client.reset();  // the client's socket closes; nothing is ever sent to it

  auto gone_future = setup.gone.get_future();
  ASSERT_TRUE(arrives(gone_future, std::chrono::seconds(5)));
  EXPECT_TRUE(gone_future.get().same_peer(address));
}

}  // namespace
}  // namespace moe::transport
