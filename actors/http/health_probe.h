#pragma once
// GET /health_generate: one greedy token through the whole engine (front door, scheduler, model
// worker, detokenizer), answered 200 once it is back and 503 with the engine's error otherwise:
// SGLang's check that the server can generate, where /health only says it is up.
#include <memory>
#include <string>

#include "http/engine_frontend.h"
#include "http/http_exchange.h"

namespace moe::http {

class HealthProbe final : public PendingAnswer, public std::enable_shared_from_this<HealthProbe> {
 public:
  HealthProbe(EngineFrontend& engine, std::weak_ptr<ResponseChannel> channel);

  // Submits the probe's request; the answer may be sent before this returns.
  void start();
  // The client went away: aborts the probe's request.
  void cancel() override;

 private:
  void answer(HttpReply reply);

  EngineFrontend& engine_;
  std::weak_ptr<ResponseChannel> channel_;
  std::string rid_;
  bool done_ = false;
};

}  // namespace moe::http
