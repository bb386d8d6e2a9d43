#pragma once
// Golden data made by Hugging Face transformers (tests/data/<fixture>/golden.json), the in-process
// engine that runs them, and the checks: exact greedy ids, logprobs within 1e-3, routing equal up
// to near-ties.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/engine_core.h"

namespace moe::testing {

struct GoldenCase {
  std::vector<int32_t> prompt_ids;
  std::vector<int32_t> output_ids;
  std::vector<float> output_logprobs;
  std::vector<std::vector<std::vector<int32_t>>> routed_experts;  // [pos][layer][k]
  std::vector<std::vector<std::vector<float>>> routed_weights;
  std::vector<float> router_min_gap;                               // [pos]
  std::vector<float> greedy_margin;                                // [output]: top1 - top2 logit
};

struct Golden {
  std::string model_dir;
  int num_moe_layers = 0;
  int top_k = 0;
  int max_new_tokens = 0;
  std::vector<GoldenCase> cases;
};

Golden load_golden(const std::string& fixture);

// The fixtures of tests/data with goldens, one per architecture, and a test's name for each (gtest
// names allow no '-'): INSTANTIATE_TEST_SUITE_P(Fixtures, T, ValuesIn(kGoldenFixtures), fixture_test_name).
// kAllGoldenFixtures adds GLM-4.5, DeepSeek-V3 and the trained code model (code-moe), whose goldens
// run on token ids (the first two have no tokenizer; code-moe's own is checked by the tokenizer suite):
// the suites that check the CPU and CUDA models against the goldens take them all;
// kGoldenFixtures are the three the other suites (quantization, bf16, speculation, pipeline stages) run.
inline const std::vector<std::string> kGoldenFixtures = {"qwen3-moe-tiny", "mixtral-tiny", "qwen2-moe-tiny"};
inline const std::vector<std::string> kAllGoldenFixtures = [] {
  std::vector<std::string> fixtures = kGoldenFixtures;
  fixtures.push_back("glm4-moe-tiny");
  fixtures.push_back("deepseek-v3-tiny");
  fixtures.push_back("code-moe");
  return fixtures;
}();
std::string fixture_test_name(const ::testing::TestParamInfo<std::string>& info);

// Outputs of (rid, index) joined: text, ids, logprobs, and routing rows [rows * L * K] decoded from
// the raw bytes of whatever dtype was asked for; weights likewise (raw float32) when returned.
struct JoinedOutput {
  std::string text;
  std::vector<int32_t> ids;
  std::vector<float> logprobs;
  std::vector<int32_t> rows;
  int64_t num_rows = 0;
  std::vector<float> weights;
  std::vector<int32_t> draft_rows;  // the STANDALONE draft's rows (draft_routed_experts), likewise
  int64_t draft_num_rows = 0;
  int32_t cached_tokens = 0;
  std::string weight_version;
  std::optional<msg::FinishReason> finish;
  int chunks = 0;
  // Prompt logprobs (logprob_start_len >= 0), and how many outputs carried them (one, once sent).
  std::vector<int32_t> input_ids;
  std::vector<float> input_logprobs;
  std::vector<std::string> input_texts;
  std::vector<msg::TokenAlternatives> input_top;
  int input_chunks = 0;
};
std::map<std::pair<std::string, int32_t>, JoinedOutput> join_outputs(const std::vector<msg::TextOutput>& outputs);

// The ids of an encoded routed-experts array (base64 or raw; int32, int16 or uint8).
std::vector<int32_t> decode_routed_experts(const msg::EncodedArray& array);

// A greedy request for ids, EOS ignored, with routing of the MoE layers returned raw as int16 and logprobs.
msg::GenerateRequest greedy_request(const std::string& rid, const std::vector<int32_t>& ids, int max_new_tokens);

// Greedy requests for every case (rid "case<i>"), generating the golden number of tokens.
std::vector<msg::GenerateRequest> greedy_requests(const Golden& golden, bool include_last = false);

// `settings` with STANDALONE speculation drafted by the checkpoint at `draft_dir`: 4 steps deep,
// `topk` children per node, `draft_tokens` tokens per verify.
EngineSettings with_standalone_draft(EngineSettings settings, const std::string& draft_dir, int topk, int draft_tokens);

// An in-process engine over `model` with the Qwen3 tokenizer of tests/data; `load_checkpoint` (optional)
// loads a STANDALONE draft and weight updates (unset: the draft on the CPU, no updates).
std::unique_ptr<EngineCore> make_engine(
    std::unique_ptr<Model> model, const EngineSettings& settings,
    ModelLoader load_checkpoint = {});

// Runs `requests` through an engine over `model` (routing captured) and returns each request's
// joined reply, in request order.
std::vector<JoinedOutput> run_engine(std::unique_ptr<Model> model, const std::vector<msg::GenerateRequest>& requests,
                                     int64_t chunked_prefill_size = 0);

// What the golden calls a near-tie a run may resolve the other way: a k-th/(k+1)-th boundary whose
// router_min_gap is below router_gap, adjacent top-k weights within weight_gap. The defaults fit
// float32 arithmetic in another order (logits move by about 1e-5).
struct NearTie {
  float router_gap = 1e-3f;
  float weight_gap = 1e-4f;
};

// Checks `expected_rows` routing rows ([rows][layer][k] flattened) against golden case `c`: equal ids,
// except at near-ties.
void expect_routing_matches_golden(const Golden& golden, const GoldenCase& c, const std::vector<int32_t>& rows,
                                   int64_t expected_rows, const NearTie& near_tie = {});

// Checks ids, logprobs and `expected_rows` routing rows of `result` against golden case `c`.
void expect_matches_golden(const Golden& golden, const GoldenCase& c, const JoinedOutput& result,
                           int64_t expected_rows, const std::string& label);

// Differences of logits, and of router logits and weights, that bf16 products (--kernel-dtype bf16)
// may resolve otherwise than the float32 goldens: at least twice the drift measured on the fixtures
// (tests/model/bf16_model_test.cpp gives the measurements).
inline constexpr float kBf16LogitAllowance = 0.15f;
inline constexpr float kBf16RouterAllowance = 0.05f;

// How many greedy outputs of a bf16-products run agree with the goldens (up to each case's first
// difference), of how many.
struct Bf16Agreement {
  size_t agreeing = 0;
  size_t total = 0;
};

// Runs every case's greedy request through an engine over `model` (bf16 products) and checks each
// case: its ids equal the golden's up to a first difference, which must come at a decision whose
// golden greedy_margin is below kBf16LogitAllowance, and its routing rows equal the golden's up to
// there, except at near-ties within kBf16RouterAllowance.
Bf16Agreement expect_bf16_agreement_with_golden(const Golden& golden, std::unique_ptr<Model> model);

// How far `other`'s prompt logits (prompt_logits) lie from `reference`'s: the largest difference
// over every case's row, and the largest change of a case's greedy margin (the reference's top
// logit less its second).
struct LogitDrift {
  double logits = 0.0;
  double margin = 0.0;
};
LogitDrift measure_logit_drift(Model& reference, Model& other, const Golden& golden);

// Logits of two models over the same rows agree within 1e-3 of the largest `reference` logit's
// magnitude (at least 1): float32 in another summation order (the CPU's against the GPU's).
void expect_logits_close(const std::vector<float>& reference, const std::vector<float>& other);

// Every case's prompt in one forward of `model` (no engine): the last prompt token's logits of each,
// [cases, vocab] in case order.
std::vector<float> prompt_logits(Model& model, const Golden& golden);

// Runs every case in one batch through an engine over `model` (steps of at most `chunk` tokens, 0 = no
// limit; with include_last, the last generated token's row too) and checks each against its golden.
void expect_batch_matches_golden(const Golden& golden, std::unique_ptr<Model> model, const std::string& label,
                                 int64_t chunk = 0, bool include_last = false);

// Runs each case alone, each through an engine over a fresh model from `load`, and checks it.
void expect_each_case_alone_matches_golden(const Golden& golden, const std::function<std::unique_ptr<Model>()>& load);

}  // namespace moe::testing
