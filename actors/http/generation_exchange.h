#pragma once
// One generation call in flight: submits its engine requests, turns their outputs into the API's
// answer (whole, or streamed as SSE), and aborts what still runs when the client goes away.
#include <memory>
#include <string>
#include <vector>

#include "api/api_error.h"
#include "api/generation_call.h"
#include "api/response_builder.h"
#include "http/engine_frontend.h"
#include "http/http_exchange.h"

namespace moe::http {

class GenerationExchange final : public PendingAnswer, public std::enable_shared_from_this<GenerationExchange> {
 public:
  GenerationExchange(api::GenerationCall call, EngineFrontend& engine, std::weak_ptr<ResponseChannel> channel);

  // Submits every request; the answer may be complete before this returns.
  void start();
  // The client went away: aborts every request that has not finished. Nothing more is sent.
  void cancel() override;

 private:
  // Adds an output to the answer; streams it, or sends the whole answer once every sample finished.
  void on_output(size_t prompt, const msg::TextOutput& output);
  // Answers `error` (an error event when the stream has started) and aborts the other requests.
  void fail(const api::ApiError& error);
  // Prompt `prompt` failed or was refused: the whole exchange fails.
  void fail_prompt(size_t prompt, const api::ApiError& error);
  // Every sample finished: sends the whole answer, or closes the stream.
  void finish();
  // Aborts the requests that still have a sample running.
  void abort_unfinished();
  // The channel, or null when the client is gone (then the call is cancelled).
  std::shared_ptr<ResponseChannel> channel();
  // Sends `payloads` as SSE events, starting the stream first when it has not started.
  void stream(const std::vector<nlohmann::json>& payloads, ResponseChannel& channel);

  api::GenerationCall call_;
  EngineFrontend& engine_;
  std::weak_ptr<ResponseChannel> channel_;
  std::unique_ptr<api::ResponseBuilder> builder_;
  std::vector<std::string> rids_;            // per prompt, once submitted
  std::vector<int32_t> unfinished_samples_;  // per prompt
  bool stream_started_ = false;
  bool done_ = false;
};

}  // namespace moe::http
