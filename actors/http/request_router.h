#pragma once
// Maps a request's method and path to its handler: the generation endpoints (SGLang's /generate,
// OpenAI's /v1/completions and /v1/chat/completions) and the informational ones (/v1/models,
// /health, /metrics, /expert_load, /expert_load/reset). 404 for an unknown path, 405 for a known path
// and wrong method.
#include <memory>

#include "api/generation_call.h"
#include "http/engine_frontend.h"
#include "http/generation_exchange.h"
#include "http/http_exchange.h"

namespace moe::http {

// Answers each request of every connection of one server.
class RequestRouter {
 public:
  // `engine` must outlive the router.
  explicit RequestRouter(EngineFrontend& engine);

  // Answers `request` through `channel` now, or returns the exchange that will (null otherwise).
  // Never throws: a bad request is answered with its error.
  std::shared_ptr<GenerationExchange> route(const HttpRequest& request, const std::shared_ptr<ResponseChannel>& channel);

 private:
  // Parses a generation call of `api` and starts its exchange.
  std::shared_ptr<GenerationExchange> generate(api::ApiKind api, const HttpRequest& request,
                                               const std::shared_ptr<ResponseChannel>& channel);
  // 200 with an empty body, as SGLang; 503 once shutting down.
  HttpReply health() const;
  // Prometheus text.
  HttpReply metrics() const;

  EngineFrontend& engine_;
  int64_t started_;  // Unix time, the `created` of the model list
};

}  // namespace moe::http
