#pragma once
// SGLang's native endpoints besides /generate, as the HTTP API receives and answers them: weight
// updates between training steps, aborting requests, tokenizing and detokenizing, the model's
// description. Parsing validates every field (ApiError 400 naming it); the engine only acts.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "api/api_error.h"
#include "moe/messages.h"

namespace moe::api {

// POST /update_weights_from_disk: SGLang's body. `model_path` is required; `weight_version` and
// `abort_all_requests` are read; SGLang's other fields (load_format, flush_cache, ...) are ignored:
// the prefix cache is always flushed, since its KV came from the old weights.
msg::UpdateWeights parse_update_weights(const nlohmann::json& body);
// SGLang's answer {"success", "message"}, plus the weight version now in effect. HTTP status 200
// on success, 400 when the old weights still serve.
nlohmann::json weights_updated_json(const msg::WeightsUpdated& answer);
int weights_updated_status(const msg::WeightsUpdated& answer);

// POST /pause_generation: SGLang's {"mode": "abort" | "retract" | "in_place"}, "abort" when absent
// (an empty body too, as SGLang's older clients send none).
msg::PauseMode parse_pause_generation(std::string_view body);
// SGLang's answer to /pause_generation and /continue_generation: {"message", "status": "ok"}.
nlohmann::json generation_control_json(const std::string& message);

// POST /update_weight_version: SGLang's {"new_version": str (required), "abort_all_requests": bool}.
// Relabels the weights serving now (no load): replies from then on carry the new version.
struct WeightVersionCall {
  std::string new_version;
  bool abort_all_requests = false;  // end every live request first (finish reason abort)
};
WeightVersionCall parse_update_weight_version(const nlohmann::json& body);
// SGLang's answer: {"success": true, "message": "Weight version updated to V", "new_version": V}.
nlohmann::json weight_version_updated_json(const std::string& new_version);
// GET /get_weight_version: SGLang's {"weight_version": V}.
nlohmann::json weight_version_json(const std::string& weight_version);

// POST /release_memory_occupation and /resume_memory_occupation (`action`): SGLang's body
// {"tags": ["weights", "kv_cache"]}, both when `tags` is absent or null (an empty body too). SGLang's
// third tag, "cuda_graph", is accepted and changes nothing (graphs are kept: the memory they address
// keeps its addresses). Answered as a weight update: {"success", "message", "weight_version"}.
msg::UpdateWeights parse_memory_occupation(std::string_view body, msg::MemoryAction action);

// SGLang's weight-group endpoints (docs/rl.md), each a weight update with `group` set, answered as
// one: POST /init_weights_update_group {master_address, master_port, rank_offset, world_size,
// group_name, backend: "nccl"}; POST /update_weights_from_distributed {names, dtypes, shapes,
// group_name, weight_version, abort_all_requests, flush_cache: true (the prefix cache is always
// flushed), load_format: null}; POST /destroy_weights_update_group {group_name}. group_name is
// "weight_update_group" when absent (SGLang's default). Every field is checked
// (check_weight_group_call) and any other refused, with a 400 naming it.
msg::UpdateWeights parse_init_weights_update_group(const nlohmann::json& body);
msg::UpdateWeights parse_update_weights_from_distributed(const nlohmann::json& body);
msg::UpdateWeights parse_destroy_weights_update_group(const nlohmann::json& body);

// POST /abort_request: {"rid": id} ends that request (its client gets its reply with finish reason
// abort); {"abort_all": true} ends every live request.
struct AbortCall {
  std::string rid;
  bool all = false;
};
AbortCall parse_abort_request(const nlohmann::json& body);

// POST /tokenize: `text` (or SGLang's `prompt`), one string or a list, tokenized as /generate
// tokenizes `text`. Answer: {"tokens", "count", "max_model_len"}, lists for a list.
struct TokenizeCall {
  std::vector<std::string> texts;
  std::vector<std::string> fields;  // the JSON path of each text, for errors: "text", "prompt[1]"
  bool batched = false;
};
TokenizeCall parse_tokenize(const nlohmann::json& body);
nlohmann::json tokenize_json(const std::vector<std::vector<int32_t>>& tokens, bool batched, int64_t max_model_len);

// POST /detokenize: `tokens`, one list of ids or a list of them. Answer: {"text"}, a list for a list.
struct DetokenizeCall {
  std::vector<std::vector<int32_t>> tokens;
  std::vector<std::string> fields;  // the JSON path of each list, for errors: "tokens", "tokens[1]"
  bool batched = false;
};
DetokenizeCall parse_detokenize(const nlohmann::json& body);
nlohmann::json detokenize_json(const std::vector<std::string>& texts, bool batched);

// GET /get_model_info: SGLang's fields and the MoE shape routing replies have.
struct ModelInfo {
  std::string model_path;      // the weights serving now (the last update's path)
  std::string tokenizer_path;
  std::string weight_version;
  std::string architecture;
  int num_moe_layers = 0;
  int num_experts = 0;
  int top_k = 0;
  int64_t max_model_len = 0;   // the longest prompt + output a request may reach
};
nlohmann::json model_info_json(const ModelInfo& info);

}  // namespace moe::api
