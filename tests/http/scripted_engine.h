#pragma once
// Test only: a deterministic EngineFrontend standing in for the tokenizer actor. A request
// generates max_new_tokens tokens "w0 ", "w1 "... (ids 1000 + g) for each of its n samples, one
// output per token, `token_interval` apart on the server's io_context. Its prompt has P tokens
// (P = text bytes, or input_ids count, or message bytes). Routing, when asked, comes raw int32
// with 2 layers, top-2: the first output carries rows 0..P-1, each later one the row of the token
// fed before it (P+G-1 rows in all); row p holds expert_at(p, layer, k, sample).
// The text "engine error" is refused at once (400); "fail after one" errs (500) after one token.
// Weight updates answer on the next turn of the loop: a model_path of "/broken" fails, any other
// succeeds and sets the weight version outputs carry. Tokens are bytes: id = byte value, < 256.
#include "common/prelude.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "api/api_error.h"
#include "http/engine_frontend.h"

namespace moe::http::test {

// Generates the scripted tokens and routing; records what it was asked.
class ScriptedEngine final : public EngineFrontend {
 public:
  static constexpr int kLayers = 2;
  static constexpr int kTopK = 2;
  // Longer texts are refused by tokenize() as the real engine refuses texts longer than a prompt.
  static constexpr size_t kMaxTokenizeBytes = 16;
  // The expert the script routes position `position` to (prompt rows are the same for every sample).
  static int32_t expert_at(int64_t position, int layer, int k, int sample, int64_t prompt_tokens);

  explicit ScriptedEngine(boost::asio::io_context& io) : io_(io) {}

  // Names a request without a rid "scripted-<n>", as the front door would mint one.
  std::optional<std::string> submit(msg::GenerateRequest request, OutputHandler on_output,
                                    ErrorHandler on_error) override;
  void abort(const std::string& rid) override;
  size_t abort_request(const std::string& rid, bool every_client) override;
  void update_weights(msg::UpdateWeights update, WeightsUpdatedHandler on_done) override;
  int64_t flush_cache() override { return ++flushes_; }
  // The script has no scheduler to pause: the HTTP tests of pausing run against moe-serve.
  std::string pause_generation(msg::PauseMode) override { throw api::ApiError(501, "the scripted engine does not pause"); }
  std::string continue_generation() override { throw api::ApiError(501, "the scripted engine does not pause"); }
  void update_weight_version(const std::string&, bool) override {
    throw api::ApiError(501, "the scripted engine keeps no weight version");
  }
  std::vector<int32_t> tokenize(const std::string& text, const std::string& field) const override;
  std::string detokenize(const std::vector<int32_t>& ids, const std::string& field) const override;
  std::string model_name() const override { return "test-model"; }
  api::ModelInfo model_info() const override;
  nlohmann::json server_info() const override;
  api::ServerStats stats() const override;
  // {{5, 0, 1}, {2, 2, 2}} over 3 tokens until a reset zeroes them.
  api::ExpertLoad expert_load(bool reset) override {
    const api::ExpertLoad read = expert_load_;
    if (reset) expert_load_ = api::ExpertLoad{{{0, 0, 0}, {0, 0, 0}}, 0};
    return read;
  }
  bool shutting_down() const override { return shutting_down_; }
  std::string health_problem() const override { return {}; }

  // Knobs the tests turn: the pace of tokens (set it on the loop) and the shutdown flag.
  std::chrono::milliseconds token_interval{0};
  std::atomic<bool> shutting_down_{false};
  // Each abort_request's every_client (set on the loop; read once the request was answered).
  std::vector<bool> abort_requests_every_client_;

  // Thread-safe views for the test thread.
  std::vector<msg::GenerateRequest> submitted() const;
  std::vector<std::string> aborted() const;
  // Waits until some request was aborted; false after `limit`.
  bool wait_for_abort(std::chrono::milliseconds limit) const;

 private:
  // A request still generating.
  struct Running {
    msg::GenerateRequest request;
    OutputHandler on_output;
    ErrorHandler on_error;
    int32_t prompt_tokens = 0;
    int32_t next_token = 0;
    std::unique_ptr<boost::asio::steady_timer> timer;
  };
  // Arms the timer of `rid` for its next token.
  void schedule(const std::string& rid);
  // Sends the next token of every sample of `rid`.
  void emit(const std::string& rid);
  // Ends every sample of `rid` with finish reason abort, as the engine answers /abort_request.
  void end_aborted(const std::string& rid);
  // Rows [first, first + count) of `sample` of a request of `prompt_tokens` prompt tokens.
  static msg::EncodedArray rows(int32_t prompt_tokens, int sample, int64_t first, int64_t count);

  boost::asio::io_context& io_;
  std::map<std::string, Running> running_;
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  std::vector<msg::GenerateRequest> submitted_;
  std::vector<std::string> aborted_;
  api::ExpertLoad expert_load_{{{5, 0, 1}, {2, 2, 2}}, 3};  // only touched on the server's loop
  std::string weight_version_ = "default";                   // likewise
  int64_t flushes_ = 0;                                      // likewise
  int64_t minted_ = 0;                                       // likewise
};

}  // namespace moe::http::test
