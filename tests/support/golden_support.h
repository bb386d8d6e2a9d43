#pragma once
// Golden data made by Hugging Face transformers (tests/data/<fixture>/golden.json) and the checks the
// engine must pass against it: exact greedy ids, logprobs within 1e-3, routing equal up to near-ties.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "generate/offline_generator.h"

namespace moe::testing {

struct GoldenCase {
  std::vector<int32_t> prompt_ids;
  std::vector<int32_t> output_ids;
  std::vector<float> output_logprobs;
  std::vector<std::vector<std::vector<int32_t>>> routed_experts;  // [pos][layer][k]
  std::vector<std::vector<std::vector<float>>> routed_weights;
  std::vector<float> router_min_gap;                               // [pos]
};

struct Golden {
  std::string model_dir;
  int num_moe_layers = 0;
  int top_k = 0;
  int max_new_tokens = 0;
  std::vector<GoldenCase> cases;
};

Golden load_golden(const std::string& fixture);

// Greedy requests for every case, generating the golden number of tokens, EOS ignored.
std::vector<GenerationRequest> greedy_requests(const Golden& golden);

// Checks `expected_rows` routing rows ([rows][layer][k] flattened) against golden case `c`: equal ids,
// except where the golden marks a near-tie (router_min_gap < 1e-3 at the k-th boundary, or adjacent
// weights within 1e-4 for the order).
void expect_routing_matches_golden(const Golden& golden, const GoldenCase& c, const std::vector<int32_t>& rows,
                                   int64_t expected_rows);

// Checks ids, logprobs and `expected_rows` routing rows of `result` against golden case `c`.
void expect_matches_golden(const Golden& golden, const GoldenCase& c, const GenerationResult& result,
                           int64_t expected_rows, const std::string& label);

}  // namespace moe::testing
