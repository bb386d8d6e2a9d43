#include "support/golden_support.h"

#include <cmath>

#include "common/json_file.h"

namespace moe::testing {

Golden load_golden(const std::string& fixture) {
  Golden g;
  g.model_dir = std::string(MOE_TEST_DATA_DIR) + "/" + fixture;
  const nlohmann::json j = read_json_file(g.model_dir + "/golden.json");
  g.num_moe_layers = j.at("num_moe_layers").get<int>();
  g.top_k = j.at("top_k").get<int>();
  g.max_new_tokens = j.at("max_new_tokens").get<int>();
  for (const auto& c : j.at("cases")) {
    GoldenCase gc;
    gc.prompt_ids = c.at("prompt_ids").get<std::vector<int32_t>>();
    gc.output_ids = c.at("output_ids").get<std::vector<int32_t>>();
    gc.output_logprobs = c.at("output_logprobs").get<std::vector<float>>();
    gc.routed_experts = c.at("routed_experts").get<decltype(gc.routed_experts)>();
    gc.routed_weights = c.at("routed_weights").get<decltype(gc.routed_weights)>();
    gc.router_min_gap = c.at("router_min_gap").get<std::vector<float>>();
    g.cases.push_back(std::move(gc));
  }
  return g;
}

std::vector<GenerationRequest> greedy_requests(const Golden& golden) {
  std::vector<GenerationRequest> requests;
  for (const GoldenCase& c : golden.cases) {
    GenerationRequest r;
    r.prompt_ids = c.prompt_ids;
    r.max_new_tokens = golden.max_new_tokens;
    r.sampling.temperature = 0.0f;
    requests.push_back(r);
  }
  return requests;
}

namespace {

// Expert `id` sits at rank j in ours; the golden rank j holds another expert. That is a legitimate
// reordering only if the golden puts `id` at an adjacent rank with a weight within 1e-4.
bool near_tie_swap(const std::vector<int32_t>& golden_ids, const std::vector<float>& golden_w, size_t j, int32_t id) {
  for (size_t other : {j - 1, j + 1}) {
    if (other >= golden_ids.size()) continue;
    if (golden_ids[other] == id && std::fabs(golden_w[other] - golden_w[j]) < 1e-4f) return true;
  }
  return false;
}

}  // namespace

void expect_routing_matches_golden(const Golden& golden, const GoldenCase& c, const std::vector<int32_t>& rows,
                                   int64_t expected_rows) {
  const int L = golden.num_moe_layers, K = golden.top_k;
  ASSERT_EQ(static_cast<int64_t>(rows.size()), expected_rows * L * K);
  for (int64_t pos = 0; pos < expected_rows; ++pos) {
    for (int l = 0; l < L; ++l) {
      const auto& want = c.routed_experts[pos][l];
      const auto& want_w = c.routed_weights[pos][l];
      for (int k = 0; k < K; ++k) {
        const int32_t got = rows[(pos * L + l) * K + k];
        if (got == want[k]) continue;
        // The k-th/(k+1)-th boundary is a near-tie: the last expert may legitimately differ.
        if (k == K - 1 && c.router_min_gap[pos] < 1e-3f) continue;
        EXPECT_TRUE(near_tie_swap(want, want_w, static_cast<size_t>(k), got))
            << "position " << pos << " layer " << l << " rank " << k << ": got expert " << got << ", golden "
            << want[k];
      }
    }
  }
}

void expect_matches_golden(const Golden& golden, const GoldenCase& c, const GenerationResult& result,
                           int64_t expected_rows, const std::string& label) {
  SCOPED_TRACE(label);
  ASSERT_EQ(result.output_ids, c.output_ids);
  ASSERT_EQ(result.output_logprobs.size(), c.output_logprobs.size());
  for (size_t i = 0; i < c.output_logprobs.size(); ++i)
    EXPECT_NEAR(result.output_logprobs[i], c.output_logprobs[i], 1e-3) << "logprob of output " << i;
  ASSERT_EQ(result.routed_rows, expected_rows);
  expect_routing_matches_golden(golden, c, result.routed_experts, expected_rows);
}

}  // namespace moe::testing
