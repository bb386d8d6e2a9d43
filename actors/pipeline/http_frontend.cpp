#include "pipeline/http_frontend.h"

namespace moe::actors {

HttpFrontend::HttpFrontend(TokenizerActor& tokenizer, std::string model_name,
                           std::function<SchedulerSnapshot()> scheduler_snapshot,
                           ExpertLoadReader read_expert_load)
    : tokenizer_(tokenizer),
      model_name_(std::move(model_name)),
      scheduler_snapshot_(std::move(scheduler_snapshot)),
      read_expert_load_(std::move(read_expert_load)) {}

void HttpFrontend::submit(msg::GenerateRequest request, OutputHandler on_output, ErrorHandler on_error) {
  ++requests_total_;
  tokenizer_.submit(
      request,
      [this, on_output = std::move(on_output)](const msg::TextOutput& output) {
        generation_tokens_total_ += output.output_ids.size();
        if (output.finish_reason) {
          prompt_tokens_total_ += static_cast<uint64_t>(output.prompt_tokens);
          cached_tokens_total_ += static_cast<uint64_t>(output.cached_tokens);
        }
        on_output(output);
      },
      std::move(on_error));
}

void HttpFrontend::abort(const std::string& rid) { tokenizer_.abort(rid, "client disconnected"); }

api::ServerStats HttpFrontend::stats() const {
  const SchedulerSnapshot scheduler = scheduler_snapshot_();
  api::ServerStats stats;
  stats.requests_total = requests_total_;
  stats.prompt_tokens_total = prompt_tokens_total_;
  stats.generation_tokens_total = generation_tokens_total_;
  stats.cached_tokens_total = cached_tokens_total_;
  stats.running_requests = scheduler.stats.num_running;
  stats.waiting_requests = scheduler.stats.num_waiting;
  stats.kv_slots_used = scheduler.stats.kv_slots_used;
  stats.kv_slots_total = scheduler.stats.kv_slots_total;
  stats.step_time_seconds = scheduler.step_time_seconds;
  stats.capture_bytes_total = scheduler.capture_bytes_total;
  stats.capture_host_cache_bytes = scheduler.capture_host_cache_bytes;
  return stats;
}

}  // namespace moe::actors
