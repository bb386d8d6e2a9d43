#include "engine/engine_sizing.h"

#include <algorithm>
#include <string>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/error.h"
#include "moe/enum_names.h"
#include "model/eagle3_config.h"
#include "model/kv_row_width.h"
#include "model/model_fingerprint.h"
#include "model/tensor_shard.h"

namespace moe {

namespace {

// A context longer than the model was trained for is an error, or with allow_long_context a warning.
void check_context_length(const EngineSettings& settings, const ModelConfig& model) {
  if (settings.context_length <= model.max_position_embeddings) return;
  const std::string what = "--context-length " + std::to_string(settings.context_length) +
                           " is above the model's max_position_embeddings " +
                           std::to_string(model.max_position_embeddings);
  if (!settings.allow_long_context)
    throw Error(what + ": positions beyond it were never trained (--allow-long-context allows it)");
  spdlog::warn("{}: allowed by --allow-long-context; outputs past position {} may be poor", what,
               model.max_position_embeddings);
}

msg::RoutedExpertsLayers routed_experts_layers(const std::string& name) {
  if (const auto layers = msg::enum_named<msg::RoutedExpertsLayers>(name)) return *layers;
  throw Error("--routed-experts-layers " + name + ": give all or moe");
}

// The STANDALONE draft's config (read again when the worker loads it) and fingerprint (which a
// worker and its scheduler must agree on); a failure names the flag.
struct DraftIdentity {
  ModelConfig config;
  uint64_t fingerprint = 0;
};
DraftIdentity draft_identity(const std::string& path) {
  try {
    return {load_model_config(path), model_fingerprint(path)};
  } catch (const std::exception& e) {
    throw Error("--speculative-draft-model-path " + path + ": " + e.what());
  }
}

// EAGLE3's head: its config and fingerprint, as draft_identity's.
struct Eagle3Identity {
  Eagle3Config config;
  uint64_t fingerprint = 0;
};
Eagle3Identity eagle3_identity(const std::string& path) {
  try {
    return {load_eagle3_config(path), model_fingerprint(path)};
  } catch (const std::exception& e) {
    throw Error("--speculative-draft-model-path " + path + " (an EAGLE-3 head): " + e.what());
  }
}

// What the draft of --speculative-algorithm keeps per token slot beside the model's KV rows, in the
// pool's element size where it is a model's KV cache.
int64_t draft_bytes_per_token(const EngineSettings& settings, const ModelConfig& model, int element_bytes) {
  switch (parse_speculative_algorithm(settings.speculative_algorithm)) {
    case SpeculativeAlgorithm::Nextn: return nextn_bytes_per_token(model);
    case SpeculativeAlgorithm::Standalone:
      return kv_bytes_per_token(draft_identity(settings.speculative_draft_model_path).config, element_bytes);
    case SpeculativeAlgorithm::Eagle3: return eagle3_bytes_per_token(eagle3_identity(settings.speculative_draft_model_path).config.layer);
    case SpeculativeAlgorithm::None:
    case SpeculativeAlgorithm::Ngram: return 0;
  }
  return 0;
}

// The attention one rank holds: with tensor parallelism its share of the heads over every rank (tp × ep,
// model/tensor_shard.h), whose KV pool keeps its own KV heads only; the whole model otherwise. Every
// rank holds as many KV heads (split evenly, or one each where the ranks outnumber them), so each sizes
// the same pool from the same budget, as the scheduler does.
ModelConfig kv_heads_of_one_rank(const ModelConfig& model, const ModelIdentity& identity) {
  if (identity.tp_size == 1) return model;
  return local_attention_config(model, TensorShard{0, identity.tp_size * identity.ep_size});
}

}  // namespace

EngineSizing size_engine(const EngineSettings& settings, const ModelConfig& model, const ModelIdentity& identity,
                         std::vector<int32_t> eos_token_ids, uint64_t seed_source) {
  check_context_length(settings, model);
  EngineSizing sizing;
  sizing.kv_element_bytes = kv_cache_element_bytes(identity.compute.device, identity.compute.kernel_dtype, model);
  sizing.kv_bytes_per_token = kv_bytes_per_token(kv_heads_of_one_rank(model, identity), sizing.kv_element_bytes);
  const int64_t context = settings.context_length > 0 ? settings.context_length : model.max_position_embeddings;

  SchedulerServiceOptions& service = sizing.service;
  SpeculativeConfig speculative{parse_speculative_algorithm(settings.speculative_algorithm),
                                settings.speculative_num_steps,
                                settings.speculative_eagle_topk,
                                settings.speculative_num_draft_tokens,
                                settings.max_tree_experts,
                                settings.speculative_draft_model_path,
                                parse_draft_quantization(settings.speculative_draft_model_quantization),
                                settings.speculative_ngram_min_match_window_size,
                                settings.speculative_ngram_max_match_window_size};
  const std::vector<LayerRange> stages =
      identity.stages.empty() ? std::vector<LayerRange>{{0, model.num_hidden_layers}} : identity.stages;
  validate(speculative, model.num_experts_per_tok, static_cast<int>(stages.size()));
  uint64_t draft_fingerprint = 0;
  if (speculative.algorithm == SpeculativeAlgorithm::Standalone) {
    sizing.worker.draft_model_path = speculative.draft_model_path;
    sizing.worker.draft_quantization = speculative.draft_quantization;
    const auto [draft, fingerprint] = draft_identity(speculative.draft_model_path);
    draft_fingerprint = fingerprint;
    if (settings.captures_routing() && draft.num_moe_layers() > 0) {
      service.draft_routing = {draft.num_moe_layers(), draft.num_experts_per_tok};
      sizing.draft_num_experts = draft.num_experts;
    }
  }
  // The head has no routing: no draft rows.
  if (speculative.algorithm == SpeculativeAlgorithm::Eagle3) {
    sizing.worker.draft_model_path = speculative.draft_model_path;
    sizing.worker.eagle3 = true;
    draft_fingerprint = eagle3_identity(speculative.draft_model_path).fingerprint;
  }
  // NEXTN's layer is one MoE layer of the target's experts and top_k.
  if (speculative.algorithm == SpeculativeAlgorithm::Nextn && settings.captures_routing()) {
    service.draft_routing = {1, model.num_experts_per_tok};
    sizing.draft_num_experts = model.num_experts;
  }
  sizing.draft_bytes_per_token = draft_bytes_per_token(settings, model, sizing.kv_element_bytes);
  const int64_t pool =
      settings.max_total_tokens > 0
          ? settings.max_total_tokens
          : std::clamp<int64_t>(
                settings.kv_cache_memory_bytes / (sizing.kv_bytes_per_token + sizing.draft_bytes_per_token), 1,
                8 * context);
  service.scheduler = SchedulerConfig{pool,    settings.max_running_requests, settings.chunked_prefill_size,
                                      !settings.disable_radix_cache, context, std::move(eos_token_ids),
                                      std::move(speculative)};
  service.scheduler.max_prefill_tokens =
      settings.max_prefill_tokens != 0          ? settings.max_prefill_tokens
      : identity.compute.device == Device::Cuda ? kDefaultGpuMaxPrefillTokens
                                                : 0;
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
  worker.tp_size = identity.tp_size;
  worker.pp_size = static_cast<int32_t>(stages.size());
  worker.draft_fingerprint = draft_fingerprint;
  describe_computation(identity.compute, service.scheduler.speculative, worker);
  for (size_t rank = 0; rank < stages.size(); ++rank) {
    msg::WorkerSettings stage = worker;
    stage.pp_rank = static_cast<int32_t>(rank);
    stage.layer_begin = stages[rank].begin;
    stage.layer_end = stages[rank].end;
    service.expected_stages.push_back(stage);
  }
  service.scheduler.max_in_flight = worker.pp_size;  // one micro-batch per stage
  service.scheduler.overlap = !settings.disable_overlap_schedule && worker.pp_size == 1 &&
                              !service.scheduler.speculative.enabled();
  worker = service.expected_stages.front();

  sizing.limits = RequestLimits{model.vocab_size,
                                context,
                                context > 0 ? std::min(pool, context) : pool,
                                settings.captures_routing(),
                                settings.enable_return_router_weights,
                                settings.max_running_requests,
                                sizing.draft_num_experts,
                                model.num_experts,
                                routed_experts_layers(settings.routed_experts_layers)};
  return sizing;
}

int64_t kv_slots_for_memory_fraction(double fraction, const DeviceMemoryUse& memory, int64_t kv_bytes_per_token) {
  if (!(fraction > 0 && fraction <= 1))
    throw Error("--mem-fraction-static must lie in (0, 1], got " + std::to_string(fraction));
  const auto gib = [](double bytes) { return fmt::format("{:.2f} GiB", bytes / (1 << 30)); };
  const double static_bytes = fraction * static_cast<double>(memory.total_bytes);
  const double pool_bytes = static_bytes - static_cast<double>(memory.used_bytes);
  if (pool_bytes < static_cast<double>(kv_bytes_per_token))
    throw Error(fmt::format("--mem-fraction-static {} gives the weights and the KV pool {} of the device's {}, but {} "
                            "are in use after loading the weights: no room for a KV pool (raise the fraction, or "
                            "give --max-total-tokens)",
                            fraction, gib(static_bytes), gib(memory.total_bytes), gib(memory.used_bytes)));
  return static_cast<int64_t>(pool_bytes / static_cast<double>(kv_bytes_per_token));
}

void size_kv_pool_on_device(EngineSettings& settings, const ModelConfig& model, const ComputeSettings& compute,
                            const std::optional<DeviceMemoryUse>& memory) {
  if (!memory || settings.max_total_tokens > 0) return;
  const double fraction = settings.mem_fraction_static > 0 ? settings.mem_fraction_static : kDefaultMemFractionStatic;
  const int element_bytes = kv_cache_element_bytes(compute.device, compute.kernel_dtype, model);
  const int64_t per_token = (memory->kv_bytes_per_token > 0 ? memory->kv_bytes_per_token
                                                             : kv_bytes_per_token(model, element_bytes)) +
                            draft_bytes_per_token(settings, model, element_bytes);
  settings.max_total_tokens = kv_slots_for_memory_fraction(fraction, *memory, per_token);
  spdlog::info("KV pool sized by --mem-fraction-static {}: {} token slots of {} bytes ({:.2f} GiB; a draft's part "
               "of a slot included), the device holding {:.2f} GiB with {:.2f} GiB in use after loading the weights",
               fraction, settings.max_total_tokens, per_token,
               static_cast<double>(settings.max_total_tokens * per_token) / (1 << 30),
               static_cast<double>(memory->total_bytes) / (1 << 30), static_cast<double>(memory->used_bytes) / (1 << 30));
}

}  // namespace moe
