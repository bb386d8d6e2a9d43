#include "serving/worker_settings.h"

#include <vector>

namespace moe {
namespace {

std::string text(int64_t value) { return std::to_string(value); }
std::string text(bool on) { return on ? "on" : "off"; }
std::string text(const std::string& name) { return name.empty() ? "none" : "'" + name + "'"; }
std::string draft(uint64_t fingerprint) {
  return fingerprint == 0 ? "none" : "the checkpoint of fingerprint " + std::to_string(fingerprint);
}

// The differences found so far, each naming its setting and both values.
class Differences {
 public:
  template <class T>
  void compare(const char* setting, const T& scheduler, const T& worker) {
    if (!(scheduler == worker))
      add(std::string("the model worker's ") + setting + " is " + text(worker) + ", the scheduler's " + text(scheduler));
  }
  void add(std::string difference) { found_.push_back(std::move(difference)); }
  std::optional<std::string> joined() const {
    if (found_.empty()) return std::nullopt;
    std::string all = found_.front();
    for (size_t i = 1; i < found_.size(); ++i) all += "; " + found_[i];
    return all;
  }

 private:
  std::vector<std::string> found_;
};

std::string other_weights(uint64_t scheduler, uint64_t worker, const ServingWeights& serving) {
  return "the model worker serves other weights (checkpoint fingerprint " + std::to_string(worker) +
         ", the scheduler's " + std::to_string(scheduler) + ": " + serving.model_path + ", weight version '" +
         serving.weight_version + "'; start the worker with --model-path " + serving.model_path + ")";
}

std::string other_layers(const msg::WorkerSettings& expected, const msg::WorkerSettings& worker) {
  return "the model worker of pipeline stage " + std::to_string(worker.pp_rank) + " holds layers [" +
         std::to_string(worker.layer_begin) + ", " + std::to_string(worker.layer_end) +
         "), the scheduler's split gives it [" + std::to_string(expected.layer_begin) + ", " +
         std::to_string(expected.layer_end) + ") (--pp-layer-split)";
}

}  // namespace

std::optional<std::string> settings_mismatch(const msg::WorkerSettings& expected, const msg::WorkerSettings& worker,
                                             const ServingWeights& serving) {
  Differences d;
  if (worker.model_fingerprint != expected.model_fingerprint)
    d.add(other_weights(expected.model_fingerprint, worker.model_fingerprint, serving));
  d.compare("KV slots (--max-total-tokens, plus one padding slot)", expected.kv_slots, worker.kv_slots);
  d.compare("tokens per step (--chunked-prefill-size)", expected.max_batch_tokens, worker.max_batch_tokens);
  d.compare("routed-experts capture (--enable-return-routed-experts)", expected.capture_routing, worker.capture_routing);
  d.compare("router-weights capture (--enable-return-router-weights)", expected.capture_router_weights,
            worker.capture_router_weights);
  d.compare<int64_t>("--ep-size", expected.ep_size, worker.ep_size);
  d.compare<int64_t>("--tp-size", expected.tp_size, worker.tp_size);
  d.compare<int64_t>("--pp-size", expected.pp_size, worker.pp_size);
  if (worker.layer_begin != expected.layer_begin || worker.layer_end != expected.layer_end)
    d.add(other_layers(expected, worker));
  if (worker.draft_fingerprint != expected.draft_fingerprint)
    d.add("the model worker's STANDALONE draft model (--speculative-algorithm STANDALONE with "
          "--speculative-draft-model-path) is " + draft(worker.draft_fingerprint) + ", the scheduler's " +
          draft(expected.draft_fingerprint));
  d.compare("--device", expected.device, worker.device);
  d.compare("MoE runner (--moe-runner-backend)", expected.moe_backend, worker.moe_backend);
  d.compare("--quantization", expected.quantization, worker.quantization);
  d.compare("--quantization-group-size (of int4 at load)", expected.quantization_group_size,
            worker.quantization_group_size);
  d.compare("--kernel-dtype", expected.kernel_dtype, worker.kernel_dtype);
  d.compare("--speculative-algorithm", expected.speculative_algorithm, worker.speculative_algorithm);
  d.compare<int64_t>("--speculative-num-steps", expected.speculative_num_steps, worker.speculative_num_steps);
  d.compare<int64_t>("--speculative-eagle-topk", expected.speculative_eagle_topk, worker.speculative_eagle_topk);
  d.compare<int64_t>("--speculative-num-draft-tokens", expected.speculative_num_draft_tokens,
                     worker.speculative_num_draft_tokens);
  d.compare<int64_t>("--max-tree-experts", expected.max_tree_experts, worker.max_tree_experts);
  d.compare("STANDALONE draft's quantization (--speculative-draft-model-quantization, else --quantization)",
            expected.draft_quantization, worker.draft_quantization);
  return d.joined();
}

}  // namespace moe
