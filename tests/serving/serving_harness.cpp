#include "serving_harness.h"

#include <cstring>
#include <stdexcept>

#include "capture/base64.h"
#include "tokenizer/tokenizer.h"

namespace moe::testing {
namespace {

template <typename T>
void append_as(const std::string& bytes, std::vector<int32_t>& out) {
  const size_t count = bytes.size() / sizeof(T);
  for (size_t i = 0; i < count; ++i) {
    T value;
    std::memcpy(&value, bytes.data() + i * sizeof(T), sizeof(T));
    out.push_back(static_cast<int32_t>(value));
  }
}

}  // namespace

std::unique_ptr<InProcessPipeline> make_pipeline(const HarnessOptions& options) {
  ModelOptions model_options;
  model_options.ep_size = options.ep_size;
  InProcessPipelineOptions pipeline;
  pipeline.service.scheduler = options.scheduler;
  pipeline.service.enable_routed_experts = options.enable_routed_experts;
  pipeline.service.enable_router_weights = options.enable_router_weights;
  pipeline.service.seed_source = 42;
  return std::make_unique<InProcessPipeline>(
      Model::load(std::string(MOE_TEST_DATA_DIR) + "/" + options.fixture, model_options),
      tokenizer::Tokenizer::load(std::string(MOE_TEST_DATA_DIR) + "/qwen3-tokenizer"), pipeline);
}

std::vector<int32_t> decode_routed_experts(const msg::EncodedArray& array) {
  const std::string bytes = array.raw ? array.data : base64_decode(array.data);
  std::vector<int32_t> ids;
  if (array.dtype == "int32")
    append_as<int32_t>(bytes, ids);
  else if (array.dtype == "int16")
    append_as<int16_t>(bytes, ids);
  else if (array.dtype == "uint8")
    append_as<uint8_t>(bytes, ids);
  else
    throw std::runtime_error("unexpected routed_experts dtype " + array.dtype);
  return ids;
}

std::map<std::pair<std::string, int32_t>, JoinedOutput> join_outputs(const std::vector<msg::TextOutput>& outputs) {
  std::map<std::pair<std::string, int32_t>, JoinedOutput> joined;
  for (const auto& o : outputs) {
    JoinedOutput& j = joined[{o.rid, o.index}];
    j.text += o.text;
    j.ids.insert(j.ids.end(), o.output_ids.begin(), o.output_ids.end());
    if (o.routed_experts) {
      const std::vector<int32_t> ids = decode_routed_experts(*o.routed_experts);
      j.rows.insert(j.rows.end(), ids.begin(), ids.end());
      j.num_rows += o.routed_experts->shape[0];
    }
    if (o.router_weights) {
      const std::string bytes = o.router_weights->raw ? o.router_weights->data : base64_decode(o.router_weights->data);
      const size_t old = j.weights.size();
      j.weights.resize(old + bytes.size() / sizeof(float));
      std::memcpy(j.weights.data() + old, bytes.data(), bytes.size());
    }
    j.cached_tokens = o.cached_tokens;
    if (o.finish_reason) j.finish = o.finish_reason;
    ++j.chunks;
  }
  return joined;
}

msg::TokenizedRequest greedy_request(const std::string& rid, const std::vector<int32_t>& ids, int max_new_tokens) {
  msg::TokenizedRequest r;
  r.rid = rid;
  r.input_ids = ids;
  r.sampling.temperature = 0.0f;
  r.sampling.max_new_tokens = max_new_tokens;
  r.sampling.ignore_eos = true;
  r.routing.return_routed_experts = true;
  r.routing.raw = true;
  r.routing.dtype = "int16";
  return r;
}

}  // namespace moe::testing
