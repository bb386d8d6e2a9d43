// Request latencies from the times outputs arrive: TTFT once, inter-token per token, e2e at the end;
// and the --log-requests line.
#include "api/request_latency.h"

#include <gtest/gtest.h>

#include "api_test_support.h"

namespace moe::api {
namespace {

using std::chrono::milliseconds;

TEST(RequestTiming, TtftOnceInterTokenPerTokenE2eAtTheEnd) {
  const SteadyTime start{};
  LatencyHistograms latencies;
  RequestTiming timing(start);
  timing.observe(test::text_output("r", 0, "a", {1}, 5, 1), start + milliseconds(40), latencies);
  timing.observe(test::text_output("r", 0, "bc", {2, 3}, 5, 3), start + milliseconds(100), latencies);
  msg::TextOutput last = test::text_output("r", 0, "", {}, 5, 3);
  last.finish_reason = test::finish(msg::FinishKind::Length);
  last.cached_tokens = 2;
  timing.observe(last, start + milliseconds(130), latencies);
  timing.end(latencies);

  EXPECT_EQ(latencies.ttft_seconds.count(), 1u);
  EXPECT_NEAR(latencies.ttft_seconds.sum(), 0.040, 1e-9);
  EXPECT_EQ(latencies.inter_token_seconds.count(), 2u);  // two tokens shared the 60 ms gap; the last output had none
  EXPECT_NEAR(latencies.inter_token_seconds.sum(), 0.060, 1e-9);
  EXPECT_EQ(latencies.e2e_seconds.count(), 1u);
  EXPECT_NEAR(latencies.e2e_seconds.sum(), 0.130, 1e-9);
  EXPECT_EQ(request_log_line(last, timing),
            "request rid=r prompt_tokens=5 completion_tokens=3 cached_tokens=2 ttft=0.040s e2e=0.130s finish=length");
}

TEST(RequestTiming, AWholeReplyIsItsOwnFirstOutput) {
  const SteadyTime start{};
  LatencyHistograms latencies;
  RequestTiming timing(start);
  msg::TextOutput whole = test::text_output("r", 0, "abc", {1, 2, 3}, 5, 3);
  whole.finish_reason = test::finish(msg::FinishKind::Stop, 3);
  timing.observe(whole, start + milliseconds(250), latencies);
  timing.end(latencies);
  EXPECT_EQ(timing.ttft_seconds(), timing.e2e_seconds());
  EXPECT_EQ(latencies.inter_token_seconds.count(), 0u);
}

TEST(RenderPrometheus, LatencyHistogramsAndTheWeightVersion) {
  ServerStats stats;
  stats.latencies.ttft_seconds.observe(0.02);
  stats.latencies.e2e_seconds.observe(0.3);
  stats.latencies.inter_token_seconds.observe(0.004);
  stats.weight_version = "step-\"7\"";
  const std::string text = render_prometheus(stats, "m");
  EXPECT_NE(text.find("moe_time_to_first_token_seconds_bucket{model_name=\"m\",le=\"0.025\"} 1"), std::string::npos);
  EXPECT_NE(text.find("moe_time_to_first_token_seconds_count{model_name=\"m\"} 1"), std::string::npos);
  EXPECT_NE(text.find("moe_inter_token_latency_seconds_bucket{model_name=\"m\",le=\"0.005\"} 1"), std::string::npos);
  EXPECT_NE(text.find("moe_e2e_request_latency_seconds_bucket{model_name=\"m\",le=\"0.25\"} 0"), std::string::npos);
  EXPECT_NE(text.find("moe_weight_version_info{model_name=\"m\",weight_version=\"step-\\\"7\\\"\"} 1"),
            std::string::npos);
}

}  // namespace
}  // namespace moe::api

namespace moe::api {
namespace {

TEST(PeriodicStatsLine, ReportsTheBatchAndTheThroughputAsSGLangDoes) {
  EXPECT_EQ(periodic_stats_line({2, 1, 310, 4096, 412, 10.0}),
            "#running-req: 2, #queue-req: 1, #token: 310, token usage: 0.08, gen throughput (token/s): 41.20");
  EXPECT_EQ(periodic_stats_line({0, 0, 0, 0, 0, 0.0}),
            "#running-req: 0, #queue-req: 0, #token: 0, token usage: 0.00, gen throughput (token/s): 0.00");
}

}  // namespace
}  // namespace moe::api
