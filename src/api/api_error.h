#pragma once
// A request the HTTP API refuses, with the status and the OpenAI error fields it is answered with:
// {"error": {"message", "type", "param", "code"}}. Thrown by the parsers, caught by the server.
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "common/error.h"
#include "moe/messages.h"

namespace moe::api {

class ApiError : public Error {
 public:
  // `param` is the JSON path of the field at fault, `code` OpenAI's machine-readable code; both optional.
  ApiError(int status, std::string message, std::string param = {}, std::string code = {});

  // 400: a field is missing, of the wrong type or out of range; `field` is its JSON path.
  static ApiError invalid_field(const std::string& field, const std::string& problem);
  // 400: the request as a whole is malformed (not JSON, not an object, conflicting fields).
  static ApiError bad_request(const std::string& message);
  // 404: a path or a model that does not exist.
  static ApiError not_found(const std::string& message, std::string code = {});

  int status() const { return status_; }
  // OpenAI's error type for the status: invalid_request_error, not_found_error, server_error...
  std::string type() const;
  const std::string& param() const { return param_; }
  const std::string& code() const { return code_; }

 private:
  int status_;
  std::string param_;
  std::string code_;
};

// The OpenAI error object {"error": {...}} for `error`.
nlohmann::json error_json(const ApiError& error);
// An engine's ErrorReply as an ApiError of the same status (500 when its code is not an HTTP error).
ApiError from_error_reply(const msg::ErrorReply& reply);

}  // namespace moe::api
