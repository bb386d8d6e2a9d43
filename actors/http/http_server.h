#pragma once
// The HTTP/1.1 front end: SGLang's /generate and OpenAI's endpoints on Boost.Beast,
// running on the event loop it is given (the tokenizer actor's, single-threaded). Keep-alive,
// a body size limit (413), idle / slow-client timeouts, SSE streaming, abort of the requests of a
// client that disconnects, 503 while the engine shuts down. Beast stays inside the .cpp files.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "api/chat_output_parser.h"
#include "http/access_keys.h"

namespace boost::asio {
class io_context;
}

namespace moe::http {

class EngineFrontend;

// The most prompts one request may bring (a /generate or /v1/completions list, /tokenize's and
// /detokenize's lists). They share the front door's thread with every other client: 10,000 prompts
// held it for 11 s.
inline constexpr size_t kDefaultMaxBatchPrompts = 1024;
// The largest request body (HTTP) or frame (ZeroMQ clients) taken. A body is parsed on the front
// door's thread, so its size bounds how long one request can hold everyone else: about 1 s for 64 MiB.
inline constexpr size_t kDefaultMaxRequestBytes = 64u << 20;

// Where to listen and the limits that protect the server from slow, idle or greedy clients.
struct HttpServerConfig {
  std::string host = "127.0.0.1";
  uint16_t port = 30000;                   // 0 = a free port, see HttpServer::port()
  size_t max_body_bytes = kDefaultMaxRequestBytes;  // larger bodies get 413
  size_t max_batch_prompts = kDefaultMaxBatchPrompts;  // more prompts in one request get 400
  std::chrono::milliseconds idle_timeout{60'000};     // a kept-alive connection waiting for its next request
  std::chrono::milliseconds request_timeout{60'000};  // to receive a request's body
  std::chrono::milliseconds write_timeout{60'000};    // for a client to take one write of the answer
  std::chrono::milliseconds close_linger{2'000};      // reading what a refused client still sends before closing
  // When set, every endpoint but /health and /metrics needs "Authorization: Bearer <api_key>", and
  // the admin endpoints the admin key (401 otherwise; access_keys.h).
  AccessKeys keys;
  // The chat output parsers (--tool-call-parser, --reasoning-parser).
  api::OutputParsers output_parsers;
  // --skip-tokenizer-init: /generate answers carry output_ids and no text.
  bool ids_only = false;
};

// Owns the listening socket; connections live on as long as their operations are pending.
class HttpServer {
 public:
  // Binds and starts accepting on `io` (throws moe::Error when the address cannot be bound).
  // `engine` must outlive the server; call everything from the thread that runs `io`.
  HttpServer(boost::asio::io_context& io, EngineFrontend& engine, HttpServerConfig config);
  // stop()s.
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // The port bound (the chosen one when the config asked for 0).
  uint16_t port() const;
  // Stops accepting and closes every connection, aborting the requests still running. Idempotent.
  void stop();

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace moe::http
