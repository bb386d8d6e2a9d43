#pragma once
// Maps a request's method and path to its handler: the generation endpoints (SGLang's /generate,
// OpenAI's /v1/completions and /v1/chat/completions), SGLang's native ones (/update_weights_from_disk,
// /abort_request, /flush_cache, /health_generate, /tokenize, /detokenize, /get_model_info,
// /get_server_info, /pause_generation, /continue_generation, /get_weight_version,
// /update_weight_version, /release_memory_occupation, /resume_memory_occupation, the weight group's
// /init_weights_update_group, /update_weights_from_distributed, /destroy_weights_update_group) and
// the informational ones (/v1/models, /health, /metrics,
// /expert_load, /expert_load/reset). 404 for an unknown path, 405 for a known path and wrong method.
#include <memory>
#include <optional>
#include <string>

#include "api/generation_call.h"
#include "http/access_keys.h"
#include "http/engine_frontend.h"
#include "http/generation_exchange.h"
#include "http/http_exchange.h"
#include "http/http_server.h"
#include "http/parse_thread.h"

namespace moe::http {

// Answers each request of every connection of one server.
class RequestRouter {
 public:
  // `engine` must outlive the router. A non-empty api key is required as a Bearer token by every
  // endpoint but /health and /metrics (which load balancers and Prometheus probe without one); a
  // non-empty admin key by the admin endpoints (access_keys.h).
  // `parsers`: the chat output parsers (--tool-call-parser, --reasoning-parser). A request bringing
  // more than `max_batch_prompts` prompts (or texts or id lists) is refused before any is submitted.
  // `ids_only`: a server without a tokenizer, whose /generate answers carry no text. `front`: the
  // server's io_context, where a body parsed on the parse thread comes back to be answered.
  RequestRouter(boost::asio::io_context& front, EngineFrontend& engine, AccessKeys keys = {},
                api::OutputParsers parsers = {}, size_t max_batch_prompts = kDefaultMaxBatchPrompts,
                bool ids_only = false);

  // Answers `request` through `channel` now, or later: then it returns what the session must
  // cancel when the client leaves (a generation, a health probe), or null when nothing needs to be
  // (a weight update, which goes on and answers if the client is still there). Never throws: a bad
  // request is answered with its error.
  std::shared_ptr<PendingAnswer> route(HttpRequest request, const std::shared_ptr<ResponseChannel>& channel);

 private:
  // Parses a generation call of `api` (a body of kParseOnFrontBytes or more on the parse thread)
  // and starts its exchange.
  std::shared_ptr<PendingAnswer> generate(api::ApiKind api, HttpRequest request,
                                          const std::shared_ptr<ResponseChannel>& channel);
  // Starts the exchange of a parsed call.
  std::shared_ptr<PendingAnswer> start_generation(api::GenerationCall call, const std::shared_ptr<ResponseChannel>& channel);

  // SGLang's native endpoints (native_endpoints.cpp).
  // Starts a weight update, or a memory release or resume; the answer goes to `channel` when it is over.
  void change_weights(msg::UpdateWeights update, const std::shared_ptr<ResponseChannel>& channel);
  // By rid or abort_all: HTTP requests only, or every client's with the admin key (`admin`);
  // abort_all needs the admin key when the server has one (401).
  HttpReply abort_request(const HttpRequest& request, bool admin);
  HttpReply flush_cache();
  HttpReply pause_generation(const HttpRequest& request);
  HttpReply update_weight_version(const HttpRequest& request);
  std::shared_ptr<PendingAnswer> health_generate(const std::shared_ptr<ResponseChannel>& channel);
  HttpReply tokenize(const HttpRequest& request) const;
  HttpReply detokenize(const HttpRequest& request) const;
  // 200 with an empty body, as SGLang; 503 once shutting down.
  HttpReply health() const;
  // What generation calls, /health and weight updates get once the engine stops taking requests.
  void refuse_when_shutting_down() const;
  // A 400 when one request brings more than max_batch_prompts_ `prompts`.
  void check_batch_size(size_t prompts) const;
  // Prometheus text.
  HttpReply metrics() const;

  // The 401 for a request without the key its endpoint needs, or nothing when it may pass.
  std::optional<HttpReply> refuse_without_key(const std::string& path, const HttpRequest& request) const;
  static HttpReply unauthorized(const std::string& message);

  EngineFrontend& engine_;
  AccessKeys keys_;
  api::OutputParsers parsers_;
  size_t max_batch_prompts_;
  bool ids_only_;
  int64_t started_;  // Unix time, the `created` of the model list
  ParseThread parse_thread_;  // last: joined before the members its parses read are gone
};

}  // namespace moe::http
