#include "pipeline/server_info.h"

#include <filesystem>

#include <nlohmann/json.hpp>

namespace moe::actors {

std::string served_model_name(const ServeOptions& options) {
  if (!options.served_model_name.empty()) return options.served_model_name;
  const std::filesystem::path dir = std::filesystem::path(options.model_path).lexically_normal();
  const std::string name = (dir.has_filename() ? dir : dir.parent_path()).filename().string();
  return name.empty() ? options.model_path : name;
}

nlohmann::json server_info_json(const ServeOptions& options, const EngineSizing& sizing, const ServingWeights& weights,
                                const std::optional<msg::WorkerSettings>& worker) {
  const SchedulerConfig& scheduler = sizing.service.scheduler;
  // The accepted worker's own account of how it computes (the handshake refuses any other than
  // the expected one, which stands in while no worker is accepted).
  const msg::WorkerSettings& computing = worker ? *worker : sizing.worker.settings;
  return {
      // The flags as given (0 and empty mean the defaults the sizes below resolve).
      {"model_path", weights.model_path},
      {"tokenizer_path", options.tokenizer_path.empty() ? options.model_path : options.tokenizer_path},
      {"served_model_name", served_model_name(options)},
      {"weight_version", weights.weight_version},
      {"host", options.host},
      {"port", options.port},
      {"zmq_endpoint", options.zmq_endpoint},
      {"device", options.device},
      {"moe_runner_backend", options.moe_runner_backend},
      {"quantization", computing.quantization},
      {"quantization_group_size", options.quantization_group_size},
      {"kernel_dtype", computing.kernel_dtype},
      {"ep_size", options.ep_size},
      {"tp_size", options.tp_size},
      {"expert_placement", options.expert_placement},
      {"max_running_requests", options.max_running_requests},
      {"chunked_prefill_size", options.chunked_prefill_size},
      {"max_prefill_tokens", options.max_prefill_tokens},
      {"max_total_tokens", options.max_total_tokens},
      {"mem_fraction_static", options.mem_fraction_static},
      {"context_length", options.context_length},
      {"allow_long_context", options.allow_long_context},
      {"disable_radix_cache", options.disable_radix_cache},
      {"disable_overlap_schedule", options.disable_overlap_schedule},
      {"enable_return_routed_experts", options.captures_routing()},
      {"enable_return_router_weights", options.enable_return_router_weights},
      {"worker_endpoint", options.worker_endpoint},
      {"scheduler_endpoint", options.scheduler_endpoint},
      {"worker_timeout_ms", options.worker_timeout_ms},
      {"chat_template", options.chat_template},
      {"random_seed", options.random_seed ? nlohmann::json(*options.random_seed) : nlohmann::json()},
      {"api_key_required", !options.api_key.empty()},  // never the key itself
      {"admin_api_key_required", !options.admin_api_key.empty()},
      {"max_batch_prompts", options.max_batch_prompts},
      {"max_request_bytes", options.max_request_bytes},
      {"tool_call_parser", options.tool_call_parser},
      {"reasoning_parser", options.reasoning_parser},
      // What the engine derived from them.
      {"max_total_num_tokens", scheduler.max_total_tokens},
      {"overlap_schedule", scheduler.overlap},
      {"max_prefill_tokens_in_effect", scheduler.max_prefill_tokens},
      {"max_batch_tokens", sizing.worker.settings.max_batch_tokens},
      {"context_length_in_effect", scheduler.context_length},
      {"max_req_len", sizing.limits.max_sequence_len},
      {"kv_bytes_per_token", sizing.kv_bytes_per_token},
      {"draft_bytes_per_token", sizing.draft_bytes_per_token},
      {"kv_cache_dtype", sizing.kv_element_bytes == 2 ? "bf16" : "float32"},
      {"vocab_size", sizing.limits.vocab_size},
  };
}

}  // namespace moe::actors
