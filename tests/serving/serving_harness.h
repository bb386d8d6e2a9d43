#pragma once
// Drives the three socket-free halves of the serving pipeline in one thread, exactly as the actors
// do over ZeroMQ: SchedulerService -> ModelWorker -> SchedulerService -> DetokenizerState.
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "detokenizer/detokenizer_state.h"
#include "serving/scheduler_service.h"
#include "worker/model_worker.h"

namespace moe::testing {

struct HarnessOptions {
  std::string fixture = "qwen3-moe-tiny";
  SchedulerConfig scheduler{4096, 64, 8192, true, 8192};
  bool enable_routed_experts = true;
};

class ServingHarness {
 public:
  explicit ServingHarness(const HarnessOptions& options);
  SchedulerService& service() { return *service_; }
  const ModelConfig& config() const { return worker_->config(); }

  // Submits every request, runs until all finish, returns every TextOutput (stream chunks in order).
  std::vector<msg::TextOutput> run(const std::vector<msg::TokenizedRequest>& requests);
  std::vector<msg::ErrorReply>& errors() { return errors_; }

 private:
  void wait_for_rows();

  std::unique_ptr<ModelWorker> worker_;
  std::unique_ptr<SchedulerService> service_;
  std::unique_ptr<DetokenizerState> detokenizer_;
  std::mutex mutex_;
  std::condition_variable rows_ready_;
  int rows_signals_ = 0;
  std::vector<msg::ErrorReply> errors_;
};

// Outputs of (rid, index) joined: text, ids, and decoded routing rows [rows * L * K] (raw int16).
struct JoinedOutput {
  std::string text;
  std::vector<int32_t> ids;
  std::vector<int16_t> rows;
  int64_t num_rows = 0;
  int32_t cached_tokens = 0;
  std::optional<msg::FinishReason> finish;
  int chunks = 0;
};
std::map<std::pair<std::string, int32_t>, JoinedOutput> join_outputs(const std::vector<msg::TextOutput>& outputs);

// A greedy request for ids with routing returned raw as int16.
msg::TokenizedRequest greedy_request(const std::string& rid, const std::vector<int32_t>& ids, int max_new_tokens);

}  // namespace moe::testing
