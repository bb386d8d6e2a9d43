#pragma once
// Builds in-process pipelines over the test fixtures and joins their outputs for golden checks.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "serving/in_process_pipeline.h"

namespace moe::testing {

struct HarnessOptions {
  std::string fixture = "qwen3-moe-tiny";
  SchedulerConfig scheduler{4096, 64, 8192, true, 8192};
  bool enable_routed_experts = true;
  bool enable_router_weights = true;
  int ep_size = 1;  // --ep-size: expert-parallel shards of the MoE layers
};

// A pipeline over tests/data/<fixture> with the Qwen3 tokenizer.
std::unique_ptr<InProcessPipeline> make_pipeline(const HarnessOptions& options);

// Outputs of (rid, index) joined: text, ids, and routing rows [rows * L * K] decoded from the raw
// bytes of whatever dtype was asked for; weights likewise (raw float32) when returned.
struct JoinedOutput {
  std::string text;
  std::vector<int32_t> ids;
  std::vector<int32_t> rows;
  int64_t num_rows = 0;
  std::vector<float> weights;
  int32_t cached_tokens = 0;
  std::optional<msg::FinishReason> finish;
  int chunks = 0;
};
std::map<std::pair<std::string, int32_t>, JoinedOutput> join_outputs(const std::vector<msg::TextOutput>& outputs);

// The ids of an encoded routed-experts array (base64 or raw; int32, int16 or uint8).
std::vector<int32_t> decode_routed_experts(const msg::EncodedArray& array);

// A greedy request for ids with routing returned raw as int16.
msg::TokenizedRequest greedy_request(const std::string& rid, const std::vector<int32_t>& ids, int max_new_tokens);

}  // namespace moe::testing
