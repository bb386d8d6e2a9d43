// SGLang's native endpoints besides /generate (RequestRouter's, declared in request_router.h):
// parsing and answers live in src/api (native_calls.h); here they meet the engine.
#include "http/request_router.h"

#include <nlohmann/json.hpp>

#include "api/native_calls.h"
#include "http/health_probe.h"
#include "http/http_replies.h"

namespace moe::http {

void RequestRouter::change_weights(msg::UpdateWeights update, const std::shared_ptr<ResponseChannel>& channel) {
  refuse_when_shutting_down();
  // The answer may come minutes later; a client gone by then is not answered (the update stands).
  const std::weak_ptr<ResponseChannel> weak = channel;
  engine_.update_weights(std::move(update), [weak](const msg::WeightsUpdated& answer) {
    if (const auto out = weak.lock())
      out->send(json_reply(api::weights_updated_status(answer), api::weights_updated_json(answer)));
  });
}

HttpReply RequestRouter::abort_request(const HttpRequest& request, bool admin) {
  const api::AbortCall call = api::parse_abort_request(api::parse_json_body(request.body));
  if (call.all && !keys_.admin_api_key.empty() && !admin)
    return unauthorized("abort_all needs the admin key (--admin-api-key): Authorization: Bearer <admin key>");
  const size_t aborted = engine_.abort_request(call.all ? std::string() : call.rid, admin);
  return json_reply(200, {{"aborted", aborted}});
}

HttpReply RequestRouter::pause_generation(const HttpRequest& request) {
  const msg::PauseMode mode = api::parse_pause_generation(request.body);
  return json_reply(200, api::generation_control_json(engine_.pause_generation(mode)));
}

HttpReply RequestRouter::update_weight_version(const HttpRequest& request) {
  const api::WeightVersionCall call = api::parse_update_weight_version(api::parse_json_body(request.body));
  engine_.update_weight_version(call.new_version, call.abort_all_requests);
  return json_reply(200, api::weight_version_updated_json(call.new_version));
}

HttpReply RequestRouter::flush_cache() {
  const int64_t evicted = engine_.flush_cache();
  return HttpReply{200, "text/plain; charset=utf-8",
                   "Cache flushed: " + std::to_string(evicted) + " cached prefix token(s) evicted.\n", {}};
}

std::shared_ptr<PendingAnswer> RequestRouter::health_generate(const std::shared_ptr<ResponseChannel>& channel) {
  refuse_when_shutting_down();
  auto probe = std::make_shared<HealthProbe>(engine_, channel);
  probe->start();
  return probe;
}

HttpReply RequestRouter::tokenize(const HttpRequest& request) const {
  const api::TokenizeCall call = api::parse_tokenize(api::parse_json_body(request.body));
  check_batch_size(call.texts.size());
  std::vector<std::vector<int32_t>> tokens;
  for (size_t i = 0; i < call.texts.size(); ++i) tokens.push_back(engine_.tokenize(call.texts[i], call.fields[i]));
  return json_reply(200, api::tokenize_json(tokens, call.batched, engine_.model_info().max_model_len));
}

HttpReply RequestRouter::detokenize(const HttpRequest& request) const {
  const api::DetokenizeCall call = api::parse_detokenize(api::parse_json_body(request.body));
  check_batch_size(call.tokens.size());
  std::vector<std::string> texts;
  for (size_t i = 0; i < call.tokens.size(); ++i)
    texts.push_back(engine_.detokenize(call.tokens[i], call.fields[i]));
  return json_reply(200, api::detokenize_json(texts, call.batched));
}

}  // namespace moe::http
