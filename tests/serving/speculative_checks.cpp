#include "speculative_checks.h"

#include <set>

namespace moe::testing {

EngineSettings ngram_settings(int max_tree_experts) {
  EngineSettings s = HarnessOptions{}.settings;
  s.speculative_algorithm = "NGRAM";
  s.speculative_num_steps = 4;
  s.speculative_eagle_topk = 2;
  s.speculative_num_draft_tokens = 8;
  s.max_tree_experts = max_tree_experts;
  return s;
}

void expect_drafts_accepted(EngineCore& engine) {
  const SchedulerStats stats = engine.service().stats();
  EXPECT_GT(stats.verify_passes, 0);
  EXPECT_GT(stats.accepted_drafts, 0);
  EXPECT_LE(stats.accepted_drafts, stats.draft_tokens);
}

int64_t expect_chunks_within_expert_limit(const std::vector<msg::TextOutput>& chunks, int num_moe_layers, int top_k,
                                          size_t limit, const std::string& where) {
  const int L = num_moe_layers, K = top_k;
  int64_t several_rows = 0;
  for (size_t c = 1; c < chunks.size(); ++c) {
    if (!chunks[c].routed_experts) continue;
    const std::vector<int32_t> rows = decode_routed_experts(*chunks[c].routed_experts);
    const size_t num_rows = rows.size() / static_cast<size_t>(L * K);
    if (num_rows > 1) ++several_rows;
    for (int l = 0; l < L; ++l) {
      std::set<int32_t> experts;
      for (size_t r = 0; r < num_rows; ++r)
        for (int k = 0; k < K; ++k) experts.insert(rows[(r * L + l) * K + k]);
      EXPECT_LE(experts.size(), limit) << where << " chunk " << c << " layer " << l;
    }
  }
  return several_rows;
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

void SpeculativeServingTest::expect_limit_of_every_expert_serves_what_no_limit_serves(
    const std::function<std::unique_ptr<EngineCore>(const EngineSettings&)>& make_engine) const {
  auto unlimited = make_engine(ngram_settings(0));
  auto all = make_engine(ngram_settings(16));  // the fixture has 16 experts
  const auto a = join_outputs(unlimited->run(all_cases("c")));
  const auto b = join_outputs(all->run(all_cases("c")));
  expect_all_golden(b, "c");
  for (const auto& [key, out] : a) {
    EXPECT_EQ(out.ids, b.at(key).ids);
    EXPECT_EQ(out.rows, b.at(key).rows);
  }
}

}  // namespace moe::testing
