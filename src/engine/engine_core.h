#pragma once
// The engine step, in one place: schedule -> execute -> process results -> detokenize.
//
//   schedule         SchedulerService::next_batch     plans the step: decodes first, then prefill
//                                                     chunks, within the token budget and KV pool
//   execute          ModelWorker::execute             forward, sampling, routing capture
//   process results  SchedulerService::on_worker_result  tokens, stop checks, routing rows by KV slot
//   detokenize       DetokenizerState::apply          text, stop strings, encoded routing
//
// EngineCore runs the four phases in one thread, for moe-cli generate, the golden and serving
// tests and the benchmarks. The actors run exactly these calls, each phase on its own event loop
// with ZeroMQ between them (actors/pipeline/: the scheduler actor plans and processes results, the
// worker actor executes, the detokenizer actor detokenizes), so the two paths cannot drift apart.
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "detokenizer/detokenizer_state.h"
#include "engine/engine_sizing.h"
#include "frontend/request_preparer.h"
#include "serving/scheduler_service.h"
#include "worker/model_worker.h"

namespace moe {

struct EngineCoreOptions {
  EngineSettings settings;
  PromptFormat prompt_format;
  std::vector<int32_t> eos_token_ids;  // none: only max_new_tokens and stop_token_ids end a request
  uint64_t seed_source = 42;           // draws the seeds of requests that bring none
  // Loads the checkpoint of a weight update (and the STANDALONE draft); unset, update_weights()
  // fails and the draft loads with Model::load's defaults.
  ModelLoader load_checkpoint;
  // The checkpoint directory the model was loaded from: what resume_memory_occupation loads again
  // after the weights were released (empty: the resume fails naming no directory).
  std::string model_path;
};

class EngineCore {
 public:
  EngineCore(std::unique_ptr<Model> model, tokenizer::Tokenizer tokenizer, const EngineCoreOptions& options);

  // The front door: validated, tokenized and queued, or refused (the error also goes to errors()).
  std::optional<msg::ErrorReply> submit(const msg::GenerateRequest& request);
  // One engine step; false when there was nothing to run (rows of earlier steps may still arrive).
  // With overlapped scheduling a step's result is applied one call later, after the next step was
  // planned and run: the order the served engine's actors give it.
  bool step();
  // Submits every request, steps until all have their final reply, and returns every TextOutput
  // (stream chunks in order). Requests refused or failed go to errors().
  std::vector<msg::TextOutput> run(const std::vector<msg::GenerateRequest>& requests);
  // Loads new weights between two steps (SchedulerService::update_weights says what changes);
  // the replies of the requests it ends come out of the next run().
  msg::WeightsUpdated update_weights(msg::UpdateWeights update);

  SchedulerService& service() { return service_; }
  const ModelConfig& config() const { return worker_.config(); }
  const EngineSizing& sizing() const { return sizing_; }
  std::vector<msg::ErrorReply>& errors() { return errors_; }

 private:
  // Passes the scheduler's items through the detokenizer; replies go to outputs_.
  void detokenize();
  bool idle() const;
  // Applies the result held back by step(), if any; whether there was one.
  bool apply_held_result();
  // Waits (briefly) for the copy thread to stage a step's rows.
  void wait_for_rows();

  EngineSizing sizing_;
  RequestPreparer preparer_;
  SchedulerService service_;
  ModelWorker worker_;
  DetokenizerState detokenizer_;
  std::optional<msg::WorkerResult> held_result_;  // the last step's, not applied yet
  std::vector<msg::TextOutput> outputs_;
  std::vector<msg::ErrorReply> errors_;
  std::mutex mutex_;
  std::condition_variable rows_ready_;
  int rows_signals_ = 0;
};

}  // namespace moe
