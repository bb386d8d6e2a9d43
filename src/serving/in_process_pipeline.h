#pragma once
// The serving pipeline's three socket-free halves driven in one thread, exactly as the actors drive
// them over ZeroMQ: SchedulerService -> ModelWorker -> SchedulerService -> DetokenizerState. Tests
// use it to check routing end to end; benchmarks use it to measure capture overhead without
// transport noise.
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "detokenizer/detokenizer_state.h"
#include "serving/scheduler_service.h"
#include "worker/model_worker.h"

namespace moe {

struct InProcessPipelineOptions {
  SchedulerServiceOptions service;
  int64_t max_batch_tokens = 8192;  // the worker's capture buffer rows
};

class InProcessPipeline {
 public:
  InProcessPipeline(std::unique_ptr<Model> model, tokenizer::Tokenizer tokenizer,
                    const InProcessPipelineOptions& options);

  SchedulerService& service() { return *service_; }
  const ModelConfig& config() const { return worker_->config(); }
  // Submits every request, runs until all finish, returns every TextOutput (stream chunks in order).
  // Requests refused or failed go to errors().
  std::vector<msg::TextOutput> run(const std::vector<msg::TokenizedRequest>& requests);
  std::vector<msg::ErrorReply>& errors() { return errors_; }

 private:
  // Waits (briefly) for the copy thread to stage a step's rows.
  void wait_for_rows();

  std::unique_ptr<ModelWorker> worker_;
  std::unique_ptr<SchedulerService> service_;
  std::unique_ptr<DetokenizerState> detokenizer_;
  std::mutex mutex_;
  std::condition_variable rows_ready_;
  int rows_signals_ = 0;
  std::vector<msg::ErrorReply> errors_;
};

}  // namespace moe
