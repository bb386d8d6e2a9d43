// The host communicator with real ranks: each a thread with its own ZeroMQ context and socket over
// tcp:// on the loopback, joined through the group's handshake. The all-reduce adds in rank order,
// bit for bit what the in-process all_reduce_sum gives for the same buffers; the handshake refuses a
// missing rank, a rank whose settings differ, a group-size mismatch and a duplicate, naming the rank.
#include <gtest/gtest.h>

#include <future>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "collective/host_communicator.h"
#include "common/error.h"
#include "moe/moe_ops.h"

namespace moe::collective {
namespace {

GroupOptions options_for(int rank, int size, const std::string& endpoint) {
  GroupOptions o;
  o.endpoint = endpoint;
  o.rank = rank;
  o.size = size;
  o.name = "test rank";
  o.timeout = std::chrono::milliseconds(5000);
  return o;
}

JoinOptions join_with(const std::string& hello = "settings", std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  JoinOptions j;
  j.hello = hello;
  j.welcome = "unique id bytes";
  j.check = [](int, const std::string& theirs) { return theirs == "settings" ? "" : "hello is '" + theirs + "'"; };
  j.timeout = timeout;
  return j;
}

// A member joining in this thread: "joined", or why it was refused.
std::string join_member(const GroupOptions& options) {
  HostCommunicator c(options);
  try {
    c.join(join_with());
    return "joined";
  } catch (const Error& e) {
    return e.what();
  }
}

// Runs body(communicator) on `size` ranks, rank 0 in this thread; each member's answer (or error) by rank.
// `hello_of(rank)`: what each rank brings to the join.
template <typename Body>
std::vector<std::string> run_group(int size, Body body,
                                   std::function<std::string(int)> hello_of = [](int) { return "settings"; }) {
  HostCommunicator hub(options_for(0, size, "tcp://127.0.0.1:*"));
  std::vector<std::future<std::string>> members;
  for (int r = 1; r < size; ++r)
    members.push_back(std::async(std::launch::async, [&, r] {
      try {
        HostCommunicator member(options_for(r, size, hub.endpoint()));
        member.join(join_with(hello_of(r)));
        return body(member);
      } catch (const Error& e) {
        return std::string("error: ") + e.what();
      }
    }));
  std::vector<std::string> answers;
  try {
    hub.join(join_with());
    answers.push_back(body(hub));
  } catch (const Error& e) {
    answers.push_back(std::string("error: ") + e.what());
  }
  for (auto& m : members) answers.push_back(m.get());
  return answers;
}

// Rank r's buffer: values whose float sum depends on the order of addition.
std::vector<float> buffer_of(int rank, int count) {
  std::vector<float> v(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) v[i] = (rank % 2 ? -1.0f : 1.0f) * (1e7f / (rank + 1)) + 0.37f * (i + 1) * (rank + 1);
  return v;
}

std::string bytes_of(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

TEST(HostCommunicator, AllReduceAddsInRankOrderAsTheInProcessSum) {
  constexpr int kSize = 4, kCount = 1000;
  std::vector<std::vector<float>> buffers;
  std::vector<float*> pointers;
  for (int r = 0; r < kSize; ++r) buffers.push_back(buffer_of(r, kCount));
  for (auto& b : buffers) pointers.push_back(b.data());
  all_reduce_sum(pointers, kCount);
  const std::string expected = bytes_of(buffers[0]);
  for (int round = 0; round < 3; ++round) {
    const auto answers = run_group(kSize, [](Communicator& c) {
      std::vector<float> mine = buffer_of(c.rank(), kCount);
      // Ranks reach the collective at different times: the sum must not depend on it.
      std::this_thread::sleep_for(std::chrono::milliseconds(5 * (c.size() - c.rank())));
      c.all_reduce_sum(mine.data(), kCount);
      c.all_reduce_sum(mine.data(), 0);  // an empty collective keeps the ranks in step
      return bytes_of(mine);
    });
    for (int r = 0; r < kSize; ++r) EXPECT_EQ(answers[r], expected) << "rank " << r << " round " << round;
  }
}

TEST(HostCommunicator, AllGatherConcatenatesInRankOrder) {
  const auto answers = run_group(3, [](Communicator& c) {
    const std::string mine(4, static_cast<char>('a' + c.rank()));
    std::string all(4 * static_cast<size_t>(c.size()), '?');
    c.all_gather(mine.data(), mine.size(), all.data());
    return all;
  });
  for (const std::string& a : answers) EXPECT_EQ(a, "aaaabbbbcccc");
}

TEST(HostCommunicator, BroadcastAndWelcomeReachEveryRank) {
  const auto answers = run_group(3, [](HostCommunicator& c) {
    std::string step = c.rank() == 0 ? "step one" : "";
    EXPECT_TRUE(c.broadcast(step));
    return c.welcome() + "|" + step;
  });
  for (const std::string& a : answers) EXPECT_EQ(a, "unique id bytes|step one");
}

TEST(HostCommunicator, AWaitingRankStopsWhenAskedTo) {
  const auto answers = run_group(2, [](HostCommunicator& c) {
    if (c.rank() == 0) return std::string("hub");
    std::string nothing;
    int polls = 0;
    return c.broadcast(nothing, [&] { return ++polls < 3; }) ? std::string("received") : std::string("stopped");
  });
  EXPECT_EQ(answers[1], "stopped");
}

TEST(HostCommunicator, AMissingRankStopsTheStartNamingIt) {
  HostCommunicator hub(options_for(0, 3, "tcp://127.0.0.1:*"));
  auto member = std::async(std::launch::async, [&] { return join_member(options_for(1, 3, hub.endpoint())); });
  try {
    hub.join(join_with("settings", std::chrono::milliseconds(300)));
    FAIL() << "the group formed without rank 2";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("test rank 2 of 3 did not join"), std::string::npos) << e.what();
  }
  EXPECT_NE(member.get().find("test rank 2 of 3 did not join"), std::string::npos);
}

TEST(HostCommunicator, DifferentSettingsAreRefusedNamingTheRankAndWhy) {
  const auto answers = run_group(
      3, [](Communicator&) { return std::string("joined"); },
      [](int rank) { return rank == 2 ? "--ep-size 4" : "settings"; });
  for (const std::string& a : answers)
    EXPECT_NE(a.find("test rank 2 differs from rank 0: hello is '--ep-size 4'"), std::string::npos) << a;
}

TEST(HostCommunicator, AnotherGroupSizeIsRefused) {
  HostCommunicator hub(options_for(0, 2, "tcp://127.0.0.1:*"));
  auto member = std::async(std::launch::async, [&] { return join_member(options_for(1, 3, hub.endpoint())); });
  EXPECT_THROW(hub.join(join_with("settings", std::chrono::seconds(2))), Error);
  EXPECT_NE(member.get().find("was started for a group of 3 but rank 0's has 2"), std::string::npos);
}

TEST(HostCommunicator, TwoProcessesOfOneRankAreRefused) {
  // Rank 2 never comes, so the group waits long enough to see the second rank 1.
  HostCommunicator hub(options_for(0, 3, "tcp://127.0.0.1:*"));
  std::vector<std::future<std::string>> twins;
  for (int i = 0; i < 2; ++i)
    twins.push_back(std::async(std::launch::async, [&] { return join_member(options_for(1, 3, hub.endpoint())); }));
  try {
    hub.join(join_with("settings", std::chrono::seconds(2)));
    FAIL() << "rank 1 joined twice unnoticed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("test rank 1 joined twice"), std::string::npos) << e.what();
  }
  for (auto& t : twins) EXPECT_NE(t.get().find("test rank 1 joined twice"), std::string::npos);
}

TEST(HostCommunicator, ARankThatStopsFailsTheCollectiveAndEveryLaterOne) {
  HostCommunicator hub(options_for(0, 2, "tcp://127.0.0.1:*"));
  // Rank 1 joins, then stops without taking part in anything.
  auto member = std::async(std::launch::async, [&] {
    HostCommunicator c(options_for(1, 2, hub.endpoint()));
    c.join(join_with());
  });
  hub.join(join_with());
  member.get();
  float value = 1.0f;
  try {
    hub.all_reduce_sum(&value, 1);
    FAIL() << "the collective completed without rank 1";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("test rank 1 stopped (its connection closed)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(hub.all_reduce_sum(&value, 1), Error);
}

TEST(HostCommunicator, ARankThatDoesNotTakePartInTimeIsNamed) {
  GroupOptions o = options_for(0, 2, "tcp://127.0.0.1:*");
  o.timeout = std::chrono::milliseconds(300);
  HostCommunicator hub(o);
  std::promise<void> done;
  auto member = std::async(std::launch::async, [&] {
    HostCommunicator c(options_for(1, 2, hub.endpoint()));
    c.join(join_with());
    done.get_future().wait();  // connected, silent
  });
  hub.join(join_with());
  float value = 1.0f;
  try {
    hub.all_reduce_sum(&value, 1);
    FAIL() << "the collective completed without rank 1";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("test rank 1 did not take part in a collective within 300 ms"),
              std::string::npos)
        << e.what();
  }
  done.set_value();
  member.get();
}

}  // namespace
}  // namespace moe::collective
