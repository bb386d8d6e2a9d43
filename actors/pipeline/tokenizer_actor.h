#pragma once
// The tokenizer actor, the engine's front door: takes requests from ZeroMQ clients (a ROUTER socket
// speaking docs/zmq-protocol.md), from HTTP and from the embedding API, prepares them (validation,
// chat template, tokenization), sends them to the scheduler and routes every output back to the
// client that asked: several chunks for a streaming request, one reply (per completion) otherwise.
// ZeroMQ clients may also ask for the expert-load statistics, which the scheduler keeps, abort their
// own requests, load new weights, and pause and continue generation. Weight updates from every front (ZeroMQ, HTTP, moe::Engine)
// pass through here to the scheduler, and their answers come back here.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "api/request_latency.h"
#include "api/server_stats.h"
#include "frontend/request_preparer.h"
#include "transport/actor_loop.h"
#include "transport/endpoints.h"

namespace moe::actors {

// Reads the scheduler's expert-load counts (zeroing them in the same step when `reset`); throws
// api::ApiError when the server has none. The one road to them for ZeroMQ and HTTP clients alike.
using ExpertLoadReader = std::function<api::ExpertLoad(bool reset)>;

// What the front door asks of the scheduler directly, each a task on the scheduler's loop (which
// never runs a forward, so the wait is short).
struct SchedulerControls {
  ExpertLoadReader read_expert_load;
  std::function<void(msg::PauseMode)> pause_generation;  // SchedulerService::pause_generation
  std::function<void()> continue_generation;
  std::function<std::string()> weight_version;              // the label replies carry now
  std::function<void(std::string)> set_weight_version;      // SchedulerService::set_weight_version
};

// What every front (HTTP, ZeroMQ, the embedding API) has sent through the front door, for /metrics.
struct TrafficTotals {
  uint64_t requests = 0;           // generation requests submitted, refused ones included
  uint64_t prompt_tokens = 0;      // of finished completions
  uint64_t generation_tokens = 0;  // every output token sent back
  uint64_t cached_tokens = 0;      // prompt tokens served from the prefix cache, of finished completions
};

// Whose requests a request is among: a client's rids are its own, unique among its live requests
// only, so no client can see, abort or take another's rid. All HTTP clients are one (they share the
// API key, and SGLang's /abort_request ends a request sent on another connection); each ZeroMQ peer
// is one; the embedding API is one. Inside the engine (scheduler, detokenizer) a request goes by
// "<client>:<rid>"; its client sees only its own rid.
inline constexpr const char* kHttpClients = "http";
inline constexpr const char* kEmbeddingClient = "engine";

struct TokenizerActorEndpoints {
  std::string inbox, scheduler;
  std::string clients;  // ROUTER endpoint for ZeroMQ clients; empty = none
  int64_t max_client_frame_bytes = 64 << 20;  // larger client frames drop the connection (a public socket)
  // --admin-api-key: the ZeroMQ operations that change what the server serves carry it; empty = none.
  std::string admin_api_key;
};

class TokenizerActor {
 public:
  using OutputHandler = std::function<void(const msg::TextOutput&)>;
  using ErrorHandler = std::function<void(const msg::ErrorReply&)>;
  using WeightsUpdatedHandler = std::function<void(const msg::WeightsUpdated&)>;

  TokenizerActor(transport::ActorLoop& loop, std::unique_ptr<RequestPreparer> preparer,
                 const TokenizerActorEndpoints& endpoints, SchedulerControls scheduler);

  // On the loop's thread: queue a request of `client` (kHttpClients, kEmbeddingClient); outputs and
  // errors come back through the handlers, carrying the client's own rid. Returns that rid
  // (generated when the request had none), or nothing when the request was refused at once
  // (on_error has been called; a live request of the client with the same rid is left untouched).
  std::optional<std::string> submit(const std::string& client, const msg::GenerateRequest& request,
                                    OutputHandler on_output, ErrorHandler on_error);
  // On the loop's thread: the client's request rid lost its listener (its handlers are dropped,
  // nothing more is sent).
  void abort(const std::string& client, const std::string& rid, const std::string& reason);
  // On the loop's thread: ends `client`'s request rid (every one of its live requests with an empty
  // rid); with no client, those of every client (an administrator's abort). Each ends with finish
  // reason abort, its own client getting the reply. Returns how many requests were live.
  size_t abort_request(const std::optional<std::string>& client, const std::string& rid, const std::string& reason);
  // On the loop's thread: loads new weights (see SchedulerService::update_weights); `on_done` gets
  // the answer, also a failed one (the update is refused at once while shutting down).
  void update_weights(msg::UpdateWeights update, WeightsUpdatedHandler on_done);
  // On the loop's thread: SGLang's /pause_generation. Abort ends every live request first (each
  // client gets its reply with finish reason abort), then pauses in place; Retract and InPlace go to
  // the scheduler as they are. New requests queue until continue_generation(). Returns SGLang's message.
  std::string pause_generation(msg::PauseMode mode);
  std::string continue_generation();
  // On the loop's thread: SGLang's /get_weight_version and /update_weight_version (which, with
  // `abort_all`, ends every live request first).
  std::string weight_version() const { return scheduler_.weight_version(); }
  void update_weight_version(std::string version, bool abort_all);
  // The front door's tokenizer and limits (the /tokenize and /detokenize endpoints).
  const RequestPreparer& preparer() const { return *preparer_; }
  // The ZeroMQ client endpoint actually bound (port resolved), or empty.
  std::string client_endpoint() const { return router_ ? router_->endpoint() : std::string(); }
  size_t live_requests() const { return clients_.size(); }
  const TrafficTotals& traffic() const { return traffic_; }
  // From now on new requests are refused with 503; `fail_remaining` ends the live ones with an
  // error, and answers weight updates still out as failed.
  void begin_shutdown() { shutting_down_ = true; }
  bool shutting_down() const { return shutting_down_; }
  void fail_remaining(const std::string& message);
  // Log every finished request's lengths, timings and finish reason (--log-requests).
  void log_requests(bool on) { log_requests_ = on; }
  // Time to first output, between tokens and end to end of the requests finished so far.
  const api::LatencyHistograms& latencies() const { return latencies_; }

 private:
  struct Client {
    OutputHandler on_output;
    ErrorHandler on_error;
    int32_t remaining = 1;  // completions still to finish
    std::string client;     // whose it is (see kHttpClients)
    std::string rid;        // what its client calls it
    api::RequestTiming timing;
  };
  void on_message(msg::Message&& message);
  void on_zmq_request(transport::ClientAddress address, std::string payload);
  // Submits a ZeroMQ client's generation; its outputs and errors go back to `address`.
  void on_zmq_generate(transport::ClientAddress address, const msg::GenerateRequest& request);
  // Answers a ZeroMQ weight update, memory release or resume: the reply echoes `rid`.
  WeightsUpdatedHandler zmq_weights_answer(const transport::ClientAddress& address, std::string rid);
  // Answers {"op": "expert_load"} at once with the counts, or the error that refuses it.
  void on_zmq_expert_load(const transport::ClientAddress& address, const std::string& rid, bool reset);
  // Answers {"op": "abort"}: a ZeroMQ client may end only requests it sent itself.
  void on_zmq_abort(const transport::ClientAddress& address, const std::string& rid);
  void on_weights_updated(const msg::WeightsUpdated& answer);
  // Answers {"op": "get_weight_version"} and {"op": "update_weight_version"} as a weight update is
  // answered: {"success": true, "message", "weight_version"}, the version serving now.
  void reply_weight_version(const transport::ClientAddress& address, const std::string& rid, const std::string& message);
  void on_zmq_client_gone(const transport::ClientAddress& address);
  // Whether a ZeroMQ admin operation may run; if not, its client has been answered 401.
  bool admitted(const transport::ClientAddress& address, const std::string& rid, const std::string& admin_api_key);

  std::unique_ptr<RequestPreparer> preparer_;
  SchedulerControls scheduler_;
  transport::Outbox* to_scheduler_ = nullptr;
  transport::RouterEndpoint* router_ = nullptr;
  std::string admin_api_key_;
  std::map<std::string, Client> clients_;  // by "<client>:<rid>"
  std::map<uint64_t, WeightsUpdatedHandler> weight_updates_;  // by UpdateWeights::id
  uint64_t next_update_id_ = 1;
  bool shutting_down_ = false;
  TrafficTotals traffic_;
  bool log_requests_ = false;
  api::LatencyHistograms latencies_;
};

}  // namespace moe::actors
