#pragma once
// Every size an engine derives from its settings and the model, resolved in one place: the KV
// slot pool, the step's token budget, the worker's capture buffer rows and the front door's
// limits. moe-serve, the embedding API, moe-cli generate, the tests and the benchmarks all size
// their engines here.
#include <cstdint>
#include <vector>

#include "engine/compute_settings.h"
#include "frontend/request_preparer.h"
#include "model/layer_range.h"
#include "model/model_config.h"
#include "moe/engine_settings.h"
#include "serving/scheduler_service.h"
#include "worker/model_worker.h"

namespace moe {

// Which model a worker serves, how it is split and how it computes: part of what a worker must agree
// on with its scheduler (the fingerprint stays 0 where both run in one process over one loaded model).
struct ModelIdentity {
  uint64_t fingerprint = 0;
  int ep_size = 1;
  int tp_size = 1;
  std::vector<LayerRange> stages;  // the pipeline stages' layers; empty = one stage, the whole model
  ComputeSettings compute;
};

struct EngineSizing {
  SchedulerServiceOptions service;  // its expected_stages[0] equals worker.settings
  ModelWorkerOptions worker;
  RequestLimits limits;
  int kv_element_bytes = 4;        // the KV pool's dtype: 2 (bf16) or 4 (float32), model.h's kv_cache_element_bytes
  // Every layer's KV cache row (model/kv_row_width.h), in that dtype, of one rank: a tensor-parallel
  // rank's own KV heads only, so a budget in bytes holds more slots over more ranks.
  int64_t kv_bytes_per_token = 0;
  // What a draft keeps per token slot beside those rows (a NEXTN module's row and hidden state, or a
  // STANDALONE draft's own KV rows): a pool sized by a memory budget counts both.
  int64_t draft_bytes_per_token = 0;
  // An MoE STANDALONE draft's expert count (what its rows' dtype must hold); 0 without one.
  int draft_num_experts = 0;
};

// The KV pool, unless given, holds as many token slots as the memory budget allows, but no more
// than eight full contexts (a small model would otherwise get millions of slots it never uses).
EngineSizing size_engine(const EngineSettings& settings, const ModelConfig& model, const ModelIdentity& identity,
                         std::vector<int32_t> eos_token_ids, uint64_t seed_source);

constexpr double kDefaultMemFractionStatic = 0.88;
// A GPU step's prompt tokens beside decodes by default: a 2,048-token prompt goes in four steps,
// each of which delays the decodes by a quarter of its prefill (bench/RESULTS.md: the inter-token
// latency at c=32 with 2,048-token prompts on an H200).
constexpr int64_t kDefaultGpuMaxPrefillTokens = 512;

// The KV pool's token slots by --mem-fraction-static: what fraction · total device memory leaves
// once the memory in use after the load (the weights, the CUDA context) is counted, at
// kv_bytes_per_token a slot. A fraction outside (0, 1], or one that leaves no room, is a
// moe::Error with the numbers.
int64_t kv_slots_for_memory_fraction(double fraction, const DeviceMemoryUse& memory, int64_t kv_bytes_per_token);

// Where the model lives on a device with memory of its own and max_total_tokens is 0, sets
// max_total_tokens to the pool --mem-fraction-static sizes (logged with the numbers); otherwise
// leaves `settings` as they are (a pool given in slots, the CPU's budget of kv_cache_memory_bytes).
void size_kv_pool_on_device(EngineSettings& settings, const ModelConfig& model, const ComputeSettings& compute,
                            const std::optional<DeviceMemoryUse>& memory);

}  // namespace moe
