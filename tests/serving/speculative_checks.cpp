#include "speculative_checks.h"

namespace moe::testing {

void expect_drafts_accepted(EngineCore& engine) {
  const SchedulerStats stats = engine.service().stats();
  EXPECT_GT(stats.verify_passes, 0);
  EXPECT_GT(stats.accepted_drafts, 0);
  EXPECT_LE(stats.accepted_drafts, stats.draft_tokens);
}

std::unique_ptr<EngineCore> expect_every_case_golden_alone_and_batched(
    const std::string& fixture, const std::function<std::unique_ptr<EngineCore>()>& make_engine) {
  const Golden golden = load_golden(fixture);
  const auto rows = [&](const GoldenCase& c) {
    return static_cast<int64_t>(c.prompt_ids.size()) + golden.max_new_tokens - 1;
  };
  for (size_t i = 0; i < golden.cases.size(); ++i) {
    auto engine = make_engine();
    const GoldenCase& c = golden.cases[i];
    const auto result = join_outputs(engine->run({greedy_request("a", c.prompt_ids, golden.max_new_tokens)}));
    expect_matches_golden(golden, c, result.at({"a", 0}), rows(c), "alone case " + std::to_string(i));
  }
  auto engine = make_engine();
  const std::vector<msg::GenerateRequest> requests = greedy_requests(golden);
  const auto results = join_outputs(engine->run(requests));
  EXPECT_TRUE(engine->errors().empty());
  for (size_t i = 0; i < golden.cases.size(); ++i)
    expect_matches_golden(golden, golden.cases[i], results.at({requests[i].rid, 0}), rows(golden.cases[i]),
                          "batched case " + std::to_string(i));
  return engine;
}

void SpeculativeServingTest::expect_mixed_with_plain_golden(EngineCore& engine) const {
  std::vector<msg::GenerateRequest> requests = all_cases("spec");
  for (msg::GenerateRequest& r : all_cases("plain")) {
    r.speculative = false;
    requests.push_back(r);
  }
  const auto joined = join_outputs(engine.run(requests));
  EXPECT_TRUE(engine.errors().empty());
  expect_all_golden(joined, "spec");
  expect_all_golden(joined, "plain");
}

}  // namespace moe::testing
