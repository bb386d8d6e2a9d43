#include "http/http_replies.h"

#include <nlohmann/json.hpp>

#include "api/response_builder.h"

namespace moe::http {

HttpReply json_reply(int status, const nlohmann::json& body) {
  HttpReply reply;
  reply.status = status;
  reply.body = api::json_text(body);
  return reply;
}

HttpReply error_reply(const api::ApiError& error) { return json_reply(error.status(), api::error_json(error)); }

}  // namespace moe::http
