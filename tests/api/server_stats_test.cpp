// /metrics exposition, expert-load JSON, request ids, SSE framing and the error body.
#include "api/server_stats.h"

#include <gtest/gtest.h>


#include <nlohmann/json.hpp>

#include "api/api_error.h"
#include "api/generation_call.h"
#include "api/response_builder.h"
#include "api_test_support.h"

namespace moe::api {
namespace {

using nlohmann::json;

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos || text.rfind(line + "\n", 0) == 0;
}

TEST(Histogram, CountsEachValueInItsBucket) {
  Histogram histogram({0.1, 1.0});
  for (const double value : {0.05, 0.1, 0.5, 3.0, 4.0}) histogram.observe(value);
  EXPECT_EQ(histogram.bucket_counts(), (std::vector<uint64_t>{2, 1, 2}));  // le is inclusive
  EXPECT_EQ(histogram.count(), 5u);
  EXPECT_DOUBLE_EQ(histogram.sum(), 7.65);
  EXPECT_THROW(Histogram({1.0, 0.5}), std::invalid_argument);
}

TEST(Prometheus, RendersCountersGaugesAndACumulativeHistogram) {
  ServerStats stats;
  stats.requests_total = 12;
  stats.prompt_tokens_total = 340;
  stats.generation_tokens_total = 56;
  stats.running_requests = 3;
  stats.waiting_requests = 1;
  stats.kv_slots_used = 100;
  stats.kv_slots_total = 4096;
  stats.capture_bytes_total = 2048;
  stats.step_time_seconds.observe(0.002);
  stats.step_time_seconds.observe(0.003);
  stats.step_time_seconds.observe(20.0);
  const std::string text = render_prometheus(stats, "my \"model\"");
  const std::string label = "model_name=\"my \\\"model\\\"\"";
  EXPECT_TRUE(has_line(text, "# TYPE moe_requests_total counter")) << text;
  EXPECT_TRUE(has_line(text, "moe_requests_total{" + label + "} 12")) << text;
  EXPECT_TRUE(has_line(text, "moe_prompt_tokens_total{" + label + "} 340"));
  EXPECT_TRUE(has_line(text, "moe_generation_tokens_total{" + label + "} 56"));
  EXPECT_TRUE(has_line(text, "# TYPE moe_num_running_requests gauge"));
  EXPECT_TRUE(has_line(text, "moe_num_running_requests{" + label + "} 3"));
  EXPECT_TRUE(has_line(text, "moe_num_waiting_requests{" + label + "} 1"));
  EXPECT_TRUE(has_line(text, "moe_kv_slots_used{" + label + "} 100"));
  EXPECT_TRUE(has_line(text, "moe_kv_slots_total{" + label + "} 4096"));
  EXPECT_TRUE(has_line(text, "moe_routed_experts_capture_bytes_total{" + label + "} 2048"));
  EXPECT_TRUE(has_line(text, "# TYPE moe_step_time_seconds histogram"));
  EXPECT_TRUE(has_line(text, "moe_step_time_seconds_bucket{" + label + ",le=\"0.001\"} 0"));
  EXPECT_TRUE(has_line(text, "moe_step_time_seconds_bucket{" + label + ",le=\"0.0025\"} 1"));
  EXPECT_TRUE(has_line(text, "moe_step_time_seconds_bucket{" + label + ",le=\"0.005\"} 2"));
  EXPECT_TRUE(has_line(text, "moe_step_time_seconds_bucket{" + label + ",le=\"10\"} 2"));
  EXPECT_TRUE(has_line(text, "moe_step_time_seconds_bucket{" + label + ",le=\"+Inf\"} 3"));
  EXPECT_TRUE(has_line(text, "moe_step_time_seconds_count{" + label + "} 3"));
  EXPECT_TRUE(has_line(text, "moe_step_time_seconds_sum{" + label + "} 20.005"));
  EXPECT_EQ(text.back(), '\n');
}

TEST(ExpertLoad, ListsCountsPerLayer) {
  const json body = expert_load_json(ExpertLoad{{{1, 0, 3}, {2, 2, 0}}, 2});
  EXPECT_EQ(body, json::parse(R"({"num_moe_layers": 2, "num_experts": 3, "tokens": 2,
                                  "counts": [[1, 0, 3], [2, 2, 0]]})"));
  EXPECT_EQ(expert_load_json(ExpertLoad{})["num_experts"], 0);
}

TEST(Sse, FramesEventsAndDone) {
  EXPECT_EQ(sse_event(json{{"text", "a\nb"}}), "data: {\"text\":\"a\\nb\"}\n\n");
  EXPECT_EQ(sse_done(), "data: [DONE]\n\n");
  EXPECT_EQ(json_text(json("\xff")), "\"\xef\xbf\xbd\"");  // invalid UTF-8 becomes U+FFFD
}

TEST(ErrorBody, HasOpenAisShape) {
  EXPECT_EQ(error_json(ApiError::invalid_field("top_p", "must be in (0, 1]")),
            json::parse(R"({"error": {"message": "`top_p` must be in (0, 1]", "type": "invalid_request_error",
                                      "param": "top_p", "code": null}})"));
  EXPECT_EQ(error_json(ApiError::not_found("no model", "model_not_found"))["error"]["type"], "not_found_error");
  const ApiError busy = from_error_reply(test::error_reply(503, "shutting down"));
  EXPECT_EQ(busy.status(), 503);
  EXPECT_EQ(error_json(busy)["error"]["type"], "service_unavailable_error");
  EXPECT_EQ(from_error_reply(test::error_reply(0, "odd")).status(), 500);
}

}  // namespace
}  // namespace moe::api
