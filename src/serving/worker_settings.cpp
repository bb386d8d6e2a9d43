#include "serving/worker_settings.h"

namespace moe {
namespace {

std::string text(int64_t value) { return std::to_string(value); }
std::string text(bool on) { return on ? "on" : "off"; }
std::string draft(uint64_t fingerprint) {
  return fingerprint == 0 ? "none" : "the checkpoint of fingerprint " + std::to_string(fingerprint);
}

template <class T>
std::string both(const char* setting, T scheduler, T worker) {
  return std::string("the model worker's ") + setting + " is " + text(worker) + ", the scheduler's " + text(scheduler);
}

}  // namespace

std::optional<std::string> settings_mismatch(const msg::WorkerSettings& expected, const msg::WorkerSettings& worker) {
  if (worker.model_fingerprint != expected.model_fingerprint)
    return "the model worker serves another model (its config.json or weight files differ from those the "
           "scheduler serves: --model-path, or the last update_weights_from_disk)";
  if (worker.kv_slots != expected.kv_slots)
    return both("KV slots (--max-total-tokens, plus one padding slot)", expected.kv_slots, worker.kv_slots);
  if (worker.max_batch_tokens != expected.max_batch_tokens)
    return both("tokens per step (--chunked-prefill-size)", expected.max_batch_tokens, worker.max_batch_tokens);
  if (worker.capture_routing != expected.capture_routing)
    return both("routed-experts capture (--enable-return-routed-experts)", expected.capture_routing, worker.capture_routing);
  if (worker.capture_router_weights != expected.capture_router_weights)
    return both("router-weights capture (--enable-return-router-weights)", expected.capture_router_weights,
                worker.capture_router_weights);
  if (worker.ep_size != expected.ep_size)
    return both<int64_t>("--ep-size", expected.ep_size, worker.ep_size);
  if (worker.pp_size != expected.pp_size)
    return both<int64_t>("--pp-size", expected.pp_size, worker.pp_size);
  if (worker.layer_begin != expected.layer_begin || worker.layer_end != expected.layer_end)
    return "the model worker of pipeline stage " + std::to_string(worker.pp_rank) + " holds layers [" +
           std::to_string(worker.layer_begin) + ", " + std::to_string(worker.layer_end) + "), the scheduler's split gives it [" +
           std::to_string(expected.layer_begin) + ", " + std::to_string(expected.layer_end) + ") (--pp-layer-split)";
  if (worker.draft_fingerprint != expected.draft_fingerprint)
    return "the model worker's STANDALONE draft model (--speculative-algorithm STANDALONE with "
           "--speculative-draft-model-path) is " + draft(worker.draft_fingerprint) + ", the scheduler's " +
           draft(expected.draft_fingerprint);
  return std::nullopt;
}

}  // namespace moe
