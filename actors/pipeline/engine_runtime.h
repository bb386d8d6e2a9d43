#pragma once
// Starts the four actors of one engine as threads of this process (or three, when the model worker
// runs in another process), waits until each is ready, and stops them in order.
#include <chrono>
#include <memory>
#include <string>

#include "pipeline/serve_options.h"

namespace moe::transport {
class ActorLoop;
class Context;
}  // namespace moe::transport

namespace moe {
struct SchedulerStats;
struct ExpertLoad;
}

namespace moe::actors {

class TokenizerActor;

class EngineRuntime {
 public:
  // Loads the model and tokenizer, starts the actors; throws moe::Error on a bad model or flag.
  explicit EngineRuntime(const ServeOptions& options);
  // Stops the actors: the front door first, the model worker and detokenizer last.
  ~EngineRuntime();

  transport::Context& context() { return *context_; }
  transport::ActorLoop& tokenizer_loop();
  // Only from the tokenizer loop's thread.
  TokenizerActor& tokenizer();
  std::string client_endpoint() const;
  // Refuses new requests (503), waits up to `timeout` for those in flight, fails the rest.
  void drain(std::chrono::milliseconds timeout);
  int64_t kv_slots() const { return kv_slots_; }
  // The scheduler's counters (KV slots in use, preemptions), read on its loop; callable from any thread.
  SchedulerStats scheduler_stats();
  // The expert-load counts, zeroed in the same scheduler task when `reset`; callable from any thread
  // but the scheduler's. Throws api::ApiError (400) when the engine does not capture routing.
  ExpertLoad expert_load(bool reset);
  const std::string& model_name() const { return model_name_; }
  // The HTTP port bound, 0 without an HTTP server.
  int http_port() const;

 private:
  struct Actors;
  std::unique_ptr<transport::Context> context_;
  std::unique_ptr<Actors> actors_;
  int64_t kv_slots_ = 0;
  std::string model_name_;
};

// Runs only the model worker of a multi-process deployment until SIGINT or SIGTERM.
void run_worker_process(const ServeOptions& options);

}  // namespace moe::actors
