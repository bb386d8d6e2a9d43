#include "pipeline/http_frontend.h"

#include <nlohmann/json.hpp>

#include "api/api_error.h"
#include "common/error.h"

namespace moe::actors {

HttpFrontend::HttpFrontend(TokenizerActor& tokenizer, std::string model_name, EngineQueries queries)
    : tokenizer_(tokenizer), model_name_(std::move(model_name)), queries_(std::move(queries)) {}

std::optional<std::string> HttpFrontend::submit(msg::GenerateRequest request, OutputHandler on_output,
                                                ErrorHandler on_error) {
  return tokenizer_.submit(kHttpClients, request, std::move(on_output), std::move(on_error));
}

void HttpFrontend::abort(const std::string& rid) { tokenizer_.abort(kHttpClients, rid, "client disconnected"); }

size_t HttpFrontend::abort_request(const std::string& rid, bool every_client) {
  return tokenizer_.abort_request(every_client ? std::nullopt : std::optional<std::string>(kHttpClients), rid,
                                  "aborted by POST /abort_request");
}

void HttpFrontend::update_weights(msg::UpdateWeights update, WeightsUpdatedHandler on_done) {
  tokenizer_.update_weights(std::move(update), std::move(on_done));
}

std::vector<int32_t> HttpFrontend::tokenize(const std::string& text, const std::string& field) const {
  try {
    return tokenizer_.preparer().tokenize(text, field);
  } catch (const Error& e) {
    throw api::ApiError(400, e.what(), field);
  }
}

std::string HttpFrontend::detokenize(const std::vector<int32_t>& ids, const std::string& field) const {
  try {
    return tokenizer_.preparer().detokenize(ids, field);
  } catch (const Error& e) {
    throw api::ApiError(400, e.what(), field);
  }
}

nlohmann::json HttpFrontend::server_info() const { return queries_.server_info(); }

api::ServerStats HttpFrontend::stats() const {
  const SchedulerSnapshot scheduler = queries_.snapshot();
  api::ServerStats stats;
  const TrafficTotals& traffic = tokenizer_.traffic();  // HTTP and ZeroMQ alike
  stats.requests_total = traffic.requests;
  stats.prompt_tokens_total = traffic.prompt_tokens;
  stats.generation_tokens_total = traffic.generation_tokens;
  stats.cached_tokens_total = traffic.cached_tokens;
  stats.running_requests = scheduler.stats.num_running;
  stats.waiting_requests = scheduler.stats.num_waiting;
  stats.kv_slots_used = scheduler.stats.kv_slots_used;
  stats.kv_slots_total = scheduler.stats.kv_slots_total;
  stats.step_time_seconds = scheduler.step_time_seconds;
  stats.capture_bytes_total = scheduler.capture_bytes_total;
  stats.capture_host_cache_bytes = scheduler.capture_host_cache_bytes;
  stats.overlapped_tokens_total = static_cast<uint64_t>(scheduler.stats.overlapped_tokens);
  stats.spec_verify_passes_total = static_cast<uint64_t>(scheduler.stats.verify_passes);
  stats.spec_draft_tokens_total = static_cast<uint64_t>(scheduler.stats.draft_tokens);
  stats.spec_accepted_drafts_total = static_cast<uint64_t>(scheduler.stats.accepted_drafts);
  stats.spec_verify_distinct_experts_total = static_cast<uint64_t>(scheduler.stats.verify_distinct_experts);
  stats.spec_verify_layer_passes_total = static_cast<uint64_t>(scheduler.stats.verify_layer_passes);
  stats.latencies = tokenizer_.latencies();
  stats.weight_version = scheduler.weights.weight_version;
  return stats;
}

}  // namespace moe::actors
