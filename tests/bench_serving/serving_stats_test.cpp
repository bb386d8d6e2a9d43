// The figures moe-bench reports, from hand-made request records.
#include "serving/serving_stats.h"

#include <gtest/gtest.h>

#include "serving/bench_report.h"

namespace moe::bench {
namespace {

// Two completed requests and two failed ones over a 2-second run.
std::vector<RequestRecord> sample_records() {
  return {
      {0.0, {0.100, 0.110, 0.130}, 0.130, "", 16},    // TTFT 100 ms; gaps 10, 20 ms
      {0.5, {0.800, 0.840}, 0.840, "", 16},           // TTFT 300 ms; gap 40 ms
      {1.0, {1.200}, 1.300, "HTTP 500: boom", 16},    // failed after a token: not counted
      {1.5, {}, 1.600, "", 16},                       // ended without tokens
  };
}

TEST(ServingStats, CountsThroughputAndLatencies) {
  const ServingStats stats = summarize(sample_records(), 2.0);
  EXPECT_EQ(stats.completed, 2);
  EXPECT_EQ(stats.failed, 2);
  EXPECT_EQ(stats.first_error, "HTTP 500: boom");
  EXPECT_EQ(stats.output_tokens, 5);
  EXPECT_DOUBLE_EQ(stats.request_throughput, 1.0);
  EXPECT_DOUBLE_EQ(stats.output_throughput, 2.5);
  EXPECT_EQ(stats.prompt_tokens, 32);  // the completed requests' prompts only
  EXPECT_DOUBLE_EQ(stats.prompt_throughput, 16.0);
  EXPECT_NEAR(stats.ttft.mean_ms, 200, 1e-9);
  EXPECT_NEAR(stats.ttft.p50_ms, 100, 1e-9);  // nearest rank: the 1st of 2
  EXPECT_NEAR(stats.ttft.p99_ms, 300, 1e-9);
  EXPECT_NEAR(stats.itl.mean_ms, 70.0 / 3, 1e-9);
  EXPECT_NEAR(stats.itl.p50_ms, 20, 1e-9);    // the 2nd of {10, 20, 40}
  EXPECT_NEAR(stats.itl.p99_ms, 40, 1e-9);
}

TEST(ServingStats, ARequestWithoutTokensFailsWithItsOwnMessage) {
  const ServingStats stats = summarize({{0.0, {}, 0.5, ""}}, 1.0);
  EXPECT_EQ(stats.failed, 1);
  EXPECT_EQ(stats.first_error, "no tokens received");
  EXPECT_EQ(stats.output_throughput, 0);
}

TEST(ServingStats, JsonHasEveryFigure) {
  const nlohmann::json json = to_json(summarize(sample_records(), 2.0));
  EXPECT_EQ(json["completed"], 2);
  EXPECT_EQ(json["failed"], 2);
  EXPECT_EQ(json["output_tokens"], 5);
  EXPECT_DOUBLE_EQ(json["prompt_throughput"].get<double>(), 16.0);
  EXPECT_DOUBLE_EQ(json["ttft"]["p99_ms"].get<double>(), 300);
  EXPECT_DOUBLE_EQ(json["itl"]["p50_ms"].get<double>(), 20);
}

TEST(BenchReport, MarkdownRowPerRun) {
  const std::string table = markdown_table({{"c=1", 1, summarize(sample_records(), 2.0)}});
  const std::string row = "| c=1 | 2/2 | 1.000 | 2.50 | 16.0 | 200.0 / 100.0 / 300.0 | 23.3 / 20.0 / 40.0 |\n";
  EXPECT_NE(table.find(row), std::string::npos) << table;
}

}  // namespace
}  // namespace moe::bench
