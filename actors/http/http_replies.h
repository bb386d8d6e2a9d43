#pragma once
// The server's own answers: JSON bodies and OpenAI-shaped errors.
#include <nlohmann/json_fwd.hpp>

#include "api/api_error.h"
#include "http/http_exchange.h"

namespace moe::http {

// `body` as application/json with `status`.
HttpReply json_reply(int status, const nlohmann::json& body);
// {"error": {...}} with the error's status.
HttpReply error_reply(const api::ApiError& error);

}  // namespace moe::http
