#pragma once
// Builds in-process engines (the engine step without sockets) over the test fixtures.
#include <memory>
#include <string>

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

}  // namespace moe::testing
