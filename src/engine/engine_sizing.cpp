#include "engine/engine_sizing.h"

#include <algorithm>
#include <utility>

namespace moe {

EngineSizing size_engine(const EngineSettings& settings, const ModelConfig& model, const ModelIdentity& identity,
                         std::vector<int32_t> eos_token_ids, uint64_t seed_source) {
  EngineSizing sizing;
  sizing.kv_bytes_per_token =
      int64_t{2} * model.num_hidden_layers * model.num_key_value_heads * model.head_dim * int64_t{sizeof(float)};
  const int64_t context = settings.context_length > 0 ? settings.context_length : model.max_position_embeddings;
  const int64_t pool = settings.max_total_tokens > 0
                           ? settings.max_total_tokens
                           : std::clamp<int64_t>(settings.kv_cache_memory_bytes / sizing.kv_bytes_per_token, 1,
                                                 8 * context);

  SchedulerServiceOptions& service = sizing.service;
  SpeculativeConfig speculative{parse_speculative_algorithm(settings.speculative_algorithm),
                                settings.speculative_num_steps,
                                settings.speculative_eagle_topk,
                                settings.speculative_num_draft_tokens,
                                settings.max_tree_experts,
                                settings.speculative_draft_model_path};
  validate(speculative, model.num_experts_per_tok);
  service.scheduler = SchedulerConfig{pool,    settings.max_running_requests, settings.chunked_prefill_size,
                                      !settings.disable_radix_cache, context, std::move(eos_token_ids),
                                      std::move(speculative)};
  service.enable_routed_experts = settings.captures_routing();
  service.enable_router_weights = settings.enable_return_router_weights;
  service.seed_source = seed_source;

  msg::WorkerSettings& worker = sizing.worker.settings;
  worker.model_fingerprint = identity.fingerprint;
  worker.kv_slots = pool + 1;  // the scheduler's pool plus its padding slot
  worker.max_batch_tokens = settings.chunked_prefill_size > 0 ? settings.chunked_prefill_size : pool;
  worker.capture_routing = settings.captures_routing();
  worker.capture_router_weights = settings.enable_return_router_weights;
  worker.ep_size = identity.ep_size;
  service.expected_worker = worker;

  sizing.limits = RequestLimits{model.vocab_size,
                                context,
                                context > 0 ? std::min(pool, context) : pool,
                                settings.captures_routing(),
                                settings.enable_return_router_weights,
                                settings.max_running_requests};
  return sizing;
}

}  // namespace moe
