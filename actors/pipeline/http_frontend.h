#pragma once
// The HTTP server's view of the engine: requests go through the tokenizer actor (on whose loop the
// server runs); /metrics combines the front door's counters with the scheduler's.
#include <functional>
#include <string>

#include "http/engine_frontend.h"
#include "pipeline/scheduler_actor.h"
#include "pipeline/tokenizer_actor.h"

namespace moe::actors {

class HttpFrontend final : public http::EngineFrontend {
 public:
  // `scheduler_snapshot` and `read_expert_load` read the scheduler actor (blocking briefly on its loop).
  HttpFrontend(TokenizerActor& tokenizer, std::string model_name,
               std::function<SchedulerSnapshot()> scheduler_snapshot, ExpertLoadReader read_expert_load);

  void submit(msg::GenerateRequest request, OutputHandler on_output, ErrorHandler on_error) override;
  void abort(const std::string& rid) override;
  std::string model_name() const override { return model_name_; }
  api::ServerStats stats() const override;
  api::ExpertLoad expert_load(bool reset) override { return read_expert_load_(reset); }
  bool shutting_down() const override { return tokenizer_.shutting_down(); }
  std::string health_problem() const override { return scheduler_snapshot_().worker_problem; }

 private:
  TokenizerActor& tokenizer_;
  std::string model_name_;
  std::function<SchedulerSnapshot()> scheduler_snapshot_;
  ExpertLoadReader read_expert_load_;
  uint64_t requests_total_ = 0;
  uint64_t prompt_tokens_total_ = 0;
  uint64_t generation_tokens_total_ = 0;
  uint64_t cached_tokens_total_ = 0;
};

}  // namespace moe::actors
