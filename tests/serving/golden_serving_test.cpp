#include "golden_serving_test.h"

#include <algorithm>

namespace moe::testing {

void GoldenServingTest::SetUp() { golden_ = load_golden("qwen3-moe-tiny"); }

std::vector<msg::GenerateRequest> GoldenServingTest::all_cases(const std::string& prefix) const {
  std::vector<msg::GenerateRequest> requests;
  for (size_t i = 0; i < golden_.cases.size(); ++i)
    requests.push_back(greedy_request(prefix + std::to_string(i), golden_.cases[i].prompt_ids, golden_.max_new_tokens));
  return requests;
}

std::vector<int32_t> GoldenServingTest::golden_rows(size_t i, bool include_last) const {
  const GoldenCase& c = golden_.cases[i];
  const size_t rows = c.prompt_ids.size() + golden_.max_new_tokens - (include_last ? 0 : 1);
  std::vector<int32_t> flat;
  for (size_t r = 0; r < rows; ++r)
    for (const auto& layer : c.routed_experts.at(r)) flat.insert(flat.end(), layer.begin(), layer.end());
  return flat;
}

void GoldenServingTest::expect_golden(const JoinedOutput& out, size_t i, bool include_last) const {
  const GoldenCase& c = golden_.cases[i];
  EXPECT_EQ(out.ids, c.output_ids);
  ASSERT_TRUE(out.finish);
  EXPECT_EQ(out.finish->kind, msg::FinishKind::Length);
  const int64_t rows = static_cast<int64_t>(c.prompt_ids.size()) + golden_.max_new_tokens - (include_last ? 0 : 1);
  EXPECT_EQ(out.num_rows, rows);
  expect_routing_matches_golden(golden_, c, out.rows, rows);
}

void GoldenServingTest::expect_all_golden(const std::map<std::pair<std::string, int32_t>, JoinedOutput>& joined,
                                          const std::string& prefix, int32_t index, bool include_last) const {
  for (size_t i = 0; i < golden_.cases.size(); ++i) {
    SCOPED_TRACE(prefix + std::to_string(i));
    const auto it = joined.find({prefix + std::to_string(i), index});
    ASSERT_NE(it, joined.end());
    expect_golden(it->second, i, include_last);
  }
}

void GoldenServingTest::expect_stopped_golden(const JoinedOutput& out, size_t i, size_t kept, bool include_last) const {
  const GoldenCase& c = golden_.cases[i];
  EXPECT_EQ(out.ids, std::vector<int32_t>(c.output_ids.begin(), c.output_ids.begin() + static_cast<std::ptrdiff_t>(kept)));
  ASSERT_TRUE(out.finish);
  EXPECT_EQ(out.finish->kind, msg::FinishKind::Stop);
  const int64_t rows = static_cast<int64_t>(c.prompt_ids.size() + kept) - (include_last ? 0 : 1);
  EXPECT_EQ(out.num_rows, rows);
  expect_routing_matches_golden(golden_, c, out.rows, rows);
}

void GoldenServingTest::expect_prefix_hits_golden(EngineCore& engine) const {
  engine.service().fill_routing_rows(-7);  // a row neither computed nor kept from a real run shows as -7
  expect_all_golden(join_outputs(engine.run(all_cases("first"))), "first");
  const auto second = join_outputs(engine.run(all_cases("again")));
  for (size_t i = 0; i < golden_.cases.size(); ++i) {
    const JoinedOutput& out = second.at({"again" + std::to_string(i), 0});
    // All of the prompt but its last token came from the cache.
    EXPECT_EQ(out.cached_tokens, static_cast<int32_t>(golden_.cases[i].prompt_ids.size()) - 1);
    EXPECT_EQ(std::count(out.rows.begin(), out.rows.end(), -7), 0);
  }
  expect_all_golden(second, "again");
}

}  // namespace moe::testing
