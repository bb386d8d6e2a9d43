#pragma once
// A C++ client of moe-serve's ZeroMQ endpoint (docs/zmq-protocol.md): one DEALER socket with its own
// I/O thread, any number of requests in flight, replies matched to their request by rid. Light on
// purpose: no ZeroMQ, msgpack or Asio here.
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "moe/messages.h"

namespace moe {

// A request the engine refused or failed; `reply` is the engine's error (code follows HTTP).
class RequestError : public std::runtime_error {
 public:
  explicit RequestError(msg::ErrorReply reply) : std::runtime_error(reply.message), reply_(std::move(reply)) {}
  const msg::ErrorReply& reply() const { return reply_; }

 private:
  msg::ErrorReply reply_;
};

// Expert-load statistics: per MoE layer, how many tokens the router sent to each expert
// since the server started or its counts were last reset; the input of load-balanced expert placement.
struct ExpertLoad {
  std::vector<std::vector<uint64_t>> counts;  // [moe layer][expert]
  uint64_t tokens = 0;                        // tokens counted (each routed once at every MoE layer)
  bool operator==(const ExpertLoad&) const = default;
};

// Every output of a request (each chunk when streamed, one per completion otherwise), then `on_done`
// exactly once: with nullptr after the last completion's final output, or with a RequestError.
using OutputHandler = std::function<void(const msg::TextOutput&)>;
using DoneHandler = std::function<void(std::exception_ptr)>;
// The statistics an expert-load request returns (before its DoneHandler gets nullptr).
using ExpertLoadHandler = std::function<void(const ExpertLoad&)>;

class Client {
 public:
  // Connects to a server's --zmq-endpoint (ZeroMQ connects lazily: the server may start later).
  explicit Client(const std::string& endpoint);
  // Closes the socket; the server aborts requests still running for it. Pending handlers are not called.
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Sends `request` (an empty rid is replaced by a unique one) and returns its rid. Callable from any
  // thread; the handlers run on the client's I/O thread and must not block it.
  std::string submit(msg::GenerateRequest request, OutputHandler on_output, DoneHandler on_done);

  // Blocking, not streamed: one output per completion, ordered by index. Throws RequestError when the
  // server answers with an error, or when no answer came within `timeout` (code 504).
  std::vector<msg::TextOutput> generate(msg::GenerateRequest request,
                                        std::chrono::milliseconds timeout = std::chrono::minutes(10));

  // Blocking, streamed: `on_chunk` gets every chunk as it arrives (on the I/O thread); returns after
  // the last one. Throws as generate() does.
  void generate_stream(msg::GenerateRequest request, OutputHandler on_chunk,
                       std::chrono::milliseconds timeout = std::chrono::minutes(10));

  // Asks for the server's expert-load statistics; `reset` zeroes them in the same step as the read,
  // so successive resetting calls return the load of successive windows. `on_load` gets them, then
  // `on_done` nullptr, or `on_done` gets a RequestError (400 from a server started without
  // --enable-return-routed-experts). Returns the request's rid. Callable from any thread; the
  // handlers run on the I/O thread, as submit()'s do.
  std::string submit_expert_load(bool reset, ExpertLoadHandler on_load, DoneHandler on_done);

  // Blocking submit_expert_load(); throws as generate() does.
  ExpertLoad expert_load(bool reset = false, std::chrono::milliseconds timeout = std::chrono::minutes(1));

  // Ends this client's own request `rid` early: its handlers get its outputs so far with finish
  // reason abort. Returns false when no request of that rid from this client was live. Blocking;
  // throws RequestError as generate() does.
  bool abort(const std::string& rid, std::chrono::milliseconds timeout = std::chrono::minutes(1));

  // SGLang's update_weights_from_disk: the server loads update.model_path between two steps (see
  // docs/zmq-protocol.md). Blocking: the answer says whether it succeeded, and the weight version
  // in effect. Throws RequestError for a request the server cannot read, or a timeout (504).
  msg::WeightsUpdated update_weights_from_disk(msg::UpdateWeights update,
                                               std::chrono::milliseconds timeout = std::chrono::minutes(30));

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace moe
