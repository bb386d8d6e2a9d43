#pragma once
// The HTTP server's view of the engine: requests, aborts and weight updates go through the
// tokenizer actor (on whose loop the server runs); /metrics combines the front door's counters with
// the scheduler's, and the informational endpoints read the scheduler's state.
#include <functional>
#include <string>

#include "http/engine_frontend.h"
#include "pipeline/scheduler_actor.h"
#include "pipeline/tokenizer_actor.h"

namespace moe::actors {

// What the front reads from (or asks of) the rest of the engine; each call blocks briefly on the
// scheduler's loop, which never runs a forward.
struct EngineQueries {
  std::function<SchedulerSnapshot()> snapshot;
  ExpertLoadReader read_expert_load;
  std::function<int64_t()> flush_cache;          // returns the cached tokens evicted
  std::function<api::ModelInfo()> model_info;    // with the weights serving now
  std::function<nlohmann::json()> server_info;   // the flags in effect and the engine's sizes
};

class HttpFrontend final : public http::EngineFrontend {
 public:
  HttpFrontend(TokenizerActor& tokenizer, std::string model_name, EngineQueries queries);

  std::optional<std::string> submit(msg::GenerateRequest request, OutputHandler on_output,
                                    ErrorHandler on_error) override;
  void abort(const std::string& rid) override;
  size_t abort_request(const std::string& rid, bool every_client) override;
  void update_weights(msg::UpdateWeights update, WeightsUpdatedHandler on_done) override;
  std::string pause_generation(msg::PauseMode mode) override { return tokenizer_.pause_generation(mode); }
  std::string continue_generation() override { return tokenizer_.continue_generation(); }
  void update_weight_version(const std::string& version, bool abort_all) override {
    tokenizer_.update_weight_version(version, abort_all);
  }
  int64_t flush_cache() override { return queries_.flush_cache(); }
  std::vector<int32_t> tokenize(const std::string& text, const std::string& field) const override;
  std::string detokenize(const std::vector<int32_t>& ids, const std::string& field) const override;
  std::string model_name() const override { return model_name_; }
  api::ModelInfo model_info() const override { return queries_.model_info(); }
  nlohmann::json server_info() const override;
  api::ServerStats stats() const override;
  api::ExpertLoad expert_load(bool reset) override { return queries_.read_expert_load(reset); }
  bool shutting_down() const override { return tokenizer_.shutting_down(); }
  std::string health_problem() const override { return queries_.snapshot().worker_problem; }

 private:
  TokenizerActor& tokenizer_;
  std::string model_name_;
  EngineQueries queries_;
};

}  // namespace moe::actors
