#pragma once
// One HTTP request and its answer, independent of the socket library: the session (Beast) parses
// the request and implements ResponseChannel; the router and generation exchanges answer through it.
#include <string>
#include <utility>
#include <vector>

namespace moe::http {

// A request as the router sees it.
struct HttpRequest {
  std::string method;  // "GET", "POST"...
  std::string target;  // path and query
  std::string body;
  std::string authorization;  // the Authorization header; empty when absent
};

// A complete (not streamed) answer.
struct HttpReply {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra ones, e.g. Allow
};

// An answer still being produced (a generation, a health probe): the session cancels it when its
// client goes away.
class PendingAnswer {
 public:
  virtual ~PendingAnswer() = default;
  // The client went away: stop what still runs for it. Nothing more is sent.
  virtual void cancel() = 0;
};

// Where an answer goes. Exactly one of send() or begin_stream() .. end_stream() per request.
class ResponseChannel {
 public:
  virtual ~ResponseChannel() = default;
  virtual void send(HttpReply reply) = 0;
  // Starts a 200 text/event-stream answer sent in chunks.
  virtual void begin_stream() = 0;
  virtual void write_stream(std::string data) = 0;
  virtual void end_stream() = 0;
};

}  // namespace moe::http
