#include "api/api_error.h"

#include <nlohmann/json.hpp>

namespace moe::api {

ApiError::ApiError(int status, std::string message, std::string param, std::string code)
    : Error(std::move(message)), status_(status), param_(std::move(param)), code_(std::move(code)) {}

ApiError ApiError::invalid_field(const std::string& field, const std::string& problem) {
  return ApiError(400, "`" + field + "` " + problem, field);
}

ApiError ApiError::bad_request(const std::string& message) { return ApiError(400, message); }

ApiError ApiError::not_found(const std::string& message, std::string code) {
  return ApiError(404, message, {}, std::move(code));
}

std::string ApiError::type() const {
  switch (status_) {
    case 400: return "invalid_request_error";
    case 404: return "not_found_error";
    case 405: return "method_not_allowed_error";
    case 413: return "request_too_large_error";
    case 503: return "service_unavailable_error";
    default: return status_ < 500 ? "invalid_request_error" : "server_error";
  }
}

nlohmann::json error_json(const ApiError& error) {
  // OpenAI sends null for an absent param or code; clients test `param is None`.
  const auto or_null = [](const std::string& value) { return value.empty() ? nlohmann::json() : nlohmann::json(value); };
  return {{"error",
           {{"message", error.what()}, {"type", error.type()}, {"param", or_null(error.param())},
            {"code", or_null(error.code())}}}};
}

ApiError from_error_reply(const msg::ErrorReply& reply) {
  const int status = reply.code >= 400 && reply.code <= 599 ? reply.code : 500;
  return ApiError(status, reply.message, reply.param);
}

}  // namespace moe::api
