// moe-bench's scheduling over a scripted transport (no sockets): concurrency, warm-up, Poisson
// pacing, failures and timeouts.
#include "serving/load_generator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <thread>

#include "common/error.h"

namespace moe::bench {
namespace {

using Clock = std::chrono::steady_clock;

// A server that answers every request with one-token chunks, one per wait(), then its end; the
// request whose id is `failing_id` ends with an error instead.
class ScriptedTransport final : public StreamingTransport {
 public:
  explicit ScriptedTransport(uint64_t failing_id = UINT64_MAX) : failing_id_(failing_id) {}

  void send(uint64_t id, const BenchRequest& request) override {
    EXPECT_FALSE(sent_.count(id)) << "id " << id << " sent twice";
    sent_[id] = request;
    remaining_[id] = request.output_len;
    max_in_flight_ = std::max(max_in_flight_, remaining_.size());
  }

  void wait(Clock::time_point, std::vector<StreamEvent>& events) override {
    for (auto it = remaining_.begin(); it != remaining_.end();) {
      const Clock::time_point now = Clock::now();
      if (it->first == failing_id_) {
        events.push_back({it->first, now, 0, true, "HTTP 400: bad prompt"});
      } else if (it->second > 0) {
        events.push_back({it->first, now, 1, false, {}});
        --it->second;
        ++it;
        continue;
      } else {
        events.push_back({it->first, now, 0, true, {}});
      }
      it = remaining_.erase(it);
    }
  }

  void cancel(uint64_t id) override { ADD_FAILURE() << "cancelled " << id; }

  std::map<uint64_t, BenchRequest> sent_;
  size_t max_in_flight_ = 0;

 private:
  uint64_t failing_id_;
  std::map<uint64_t, int> remaining_;  // in flight: tokens still to send
};

// A server that never answers: wait() sleeps until its deadline.
class SilentTransport final : public StreamingTransport {
 public:
  void send(uint64_t id, const BenchRequest&) override { in_flight_.insert(id); }
  void wait(Clock::time_point deadline, std::vector<StreamEvent>&) override {
    ASSERT_NE(deadline, Clock::time_point::max()) << "a request timeout must bound the wait";
    std::this_thread::sleep_until(deadline);
  }
  void cancel(uint64_t id) override {
    EXPECT_EQ(in_flight_.erase(id), 1u);
    cancelled_.push_back(id);
  }

  std::set<uint64_t> in_flight_;
  std::vector<uint64_t> cancelled_;
};

LoadOptions small_options() {
  LoadOptions options;
  options.num_prompts = 7;
  options.warmup_prompts = 2;
  options.input_len = 5;
  options.output_len = 3;
  options.concurrency = 3;
  options.vocab_size = 50;
  return options;
}

TEST(LoadGenerator, ClosedLoopKeepsConcurrencyAndRecordsEveryToken) {
  ScriptedTransport transport;
  LoadOptions options = small_options();
  options.return_routed_experts = true;
  double duration = -1;
  const std::vector<RequestRecord> records = run_load(transport, options, duration);
  ASSERT_EQ(records.size(), 7u);
  EXPECT_GE(duration, 0);
  EXPECT_EQ(transport.max_in_flight_, 3u);
  for (const RequestRecord& record : records) {
    EXPECT_EQ(record.error, "");
    ASSERT_EQ(record.token_times.size(), 3u);
    EXPECT_LE(record.sent, record.token_times.front());
    EXPECT_TRUE(std::is_sorted(record.token_times.begin(), record.token_times.end()));
    EXPECT_LE(record.token_times.back(), record.finished);
    EXPECT_LE(record.finished, duration);
  }
  // Warm-up and measured requests have distinct ids 0..8, each a random prompt of the options' shape.
  ASSERT_EQ(transport.sent_.size(), 9u);
  EXPECT_EQ(transport.sent_.rbegin()->first, 8u);
  std::set<std::vector<int32_t>> prompts;
  for (const auto& [id, request] : transport.sent_) {
    EXPECT_EQ(request.input_ids.size(), 5u);
    EXPECT_EQ(request.output_len, 3);
    EXPECT_TRUE(request.return_routed_experts);
    for (int32_t token : request.input_ids) EXPECT_TRUE(token >= 0 && token < 50) << token;
    prompts.insert(request.input_ids);
  }
  EXPECT_EQ(prompts.size(), 9u);
}

TEST(LoadGenerator, TheSeedFixesThePromptsAndAnotherSeedChangesThem) {
  const auto prompts_of = [](uint64_t seed) {
    ScriptedTransport transport;
    LoadOptions options = small_options();
    options.seed = seed;
    double duration = 0;
    run_load(transport, options, duration);
    return transport.sent_.at(4).input_ids;
  };
  EXPECT_EQ(prompts_of(1), prompts_of(1));
  EXPECT_NE(prompts_of(1), prompts_of(2));
}

TEST(LoadGenerator, AFailedRequestIsRecordedAndTheRunGoesOn) {
  ScriptedTransport transport(/*failing_id=*/4);  // the third measured request
  double duration = 0;
  const std::vector<RequestRecord> records = run_load(transport, small_options(), duration);
  ASSERT_EQ(records.size(), 7u);
  for (size_t i = 0; i < records.size(); ++i) {
    EXPECT_EQ(records[i].error, i == 2 ? "HTTP 400: bad prompt" : "") << i;
    EXPECT_EQ(records[i].token_times.size(), i == 2 ? 0u : 3u) << i;
  }
}

TEST(LoadGenerator, UnansweredRequestsFailAfterTheTimeoutAndAreCancelled) {
  SilentTransport transport;
  LoadOptions options = small_options();
  options.warmup_prompts = 0;
  options.num_prompts = 4;
  options.concurrency = 2;
  options.request_timeout_s = 0.2;
  double duration = 0;
  const std::vector<RequestRecord> records = run_load(transport, options, duration);
  ASSERT_EQ(records.size(), 4u);
  for (const RequestRecord& record : records) {
    EXPECT_EQ(record.error, "no answer within --request-timeout 0.2 s");
    EXPECT_GE(record.finished - record.sent, 0.2);
  }
  // A slot is refilled as soon as its request times out (not at the next deadline, 0.2 s later).
  for (const auto& [timed_out, next] : {std::pair{0, 2}, std::pair{1, 3}}) {
    EXPECT_NEAR(records[next].sent, records[timed_out].finished, 0.1) << next;
  }
  // Two rounds of two: 0 and 1 time out first, then 2 and 3.
  ASSERT_EQ(transport.cancelled_.size(), 4u);
  const std::vector<uint64_t>& cancelled = transport.cancelled_;
  EXPECT_EQ(std::set<uint64_t>(cancelled.begin(), cancelled.begin() + 2), (std::set<uint64_t>{0, 1}));
  EXPECT_EQ(std::set<uint64_t>(cancelled.begin() + 2, cancelled.end()), (std::set<uint64_t>{2, 3}));
  EXPECT_TRUE(transport.in_flight_.empty());
  EXPECT_GE(duration, 0.4);
  EXPECT_LT(duration, 5.0);
}

TEST(LoadGenerator, PoissonRateSpreadsTheSendsOverTime) {
  ScriptedTransport transport;
  LoadOptions options = small_options();
  options.num_prompts = 40;
  options.concurrency = 40;
  options.request_rate = 400;  // 40 arrivals: 0.1 s expected
  double duration = 0;
  const std::vector<RequestRecord> records = run_load(transport, options, duration);
  std::vector<double> sent;
  for (const RequestRecord& record : records) sent.push_back(record.sent);
  EXPECT_TRUE(std::is_sorted(sent.begin(), sent.end()));
  EXPECT_LT(sent.front(), 0.02);  // the first arrival is at once
  // The sum of 39 exponential gaps of mean 2.5 ms is above 40 ms with probability > 0.9999; the
  // closed loop would send all 40 at once.
  EXPECT_GT(sent.back(), 0.04);
}

TEST(LoadGenerator, RejectsANonPositiveTimeoutOrConcurrency) {
  ScriptedTransport transport;
  double duration = 0;
  LoadOptions options = small_options();
  options.concurrency = 0;
  EXPECT_THROW(run_load(transport, options, duration), Error);
  options = small_options();
  options.request_timeout_s = 0;
  EXPECT_THROW(run_load(transport, options, duration), Error);
}

}  // namespace
}  // namespace moe::bench
