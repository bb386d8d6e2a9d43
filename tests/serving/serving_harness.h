#pragma once
// Builds in-process engines (the engine step without sockets) over the test fixtures.
#include <memory>
#include <string>
#include <vector>

#include "support/golden_support.h"

namespace moe::testing {

struct HarnessOptions {
  std::string fixture = "qwen3-moe-tiny";
  EngineSettings settings = [] {
    EngineSettings s;
    s.max_total_tokens = 4096;
    s.max_running_requests = 64;
    s.chunked_prefill_size = 8192;
    s.context_length = 8192;
    s.enable_return_routed_experts = true;
    s.enable_return_router_weights = true;
    return s;
  }();
  int ep_size = 1;  // --ep-size: expert-parallel shards of the MoE layers
  Device device = Device::Cpu;  // --device: the target's and a STANDALONE draft's
};

// An engine over tests/data/<fixture> with the Qwen3 tokenizer; a STANDALONE draft loads with the
// target's model options.
std::unique_ptr<EngineCore> make_pipeline(const HarnessOptions& options);

// Runs `requests` through `core` and returns each one's joined reply (its first choice), in request
// order; an error reply fails the test.
std::vector<JoinedOutput> run_joined(EngineCore& core, const std::vector<msg::GenerateRequest>& requests);

// Whether a tensor is a decoder layer's output projection (attention's o_proj, an MLP's or expert's
// down_proj): zeroed, the layer adds nothing to the residual stream.
bool is_output_projection(const std::string& tensor);

}  // namespace moe::testing
