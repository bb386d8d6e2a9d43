#pragma once
// Helpers of the pipeline tests: an in-process engine (the four actors as threads, the ZeroMQ client
// endpoint on a real tcp socket), golden requests, decoding of the routed experts a client receives,
// and a raw DEALER socket for frames the C++ client would never send.
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "moe/messages.h"
#include "pipeline/engine_runtime.h"
#include "scheduler/scheduler.h"
#include "support/golden_support.h"
#include "transport/client_protocol.h"

namespace zmq {
class context_t;
class socket_t;
}  // namespace zmq

namespace moe {
class Client;
struct ExpertLoad;
}

namespace moe::testing {

// The tiny Qwen3-MoE fixture served with routed-experts capture on a tcp:// ZeroMQ endpoint.
actors::ServeOptions tiny_serve_options();

// A greedy request for golden case `c`: its prompt ids, the golden number of tokens, EOS ignored,
// routed experts asked as int32 base64 (the SGLang-compatible default).
msg::GenerateRequest golden_request(const Golden& golden, const GoldenCase& c, const std::string& rid);

// A client's reply, or all chunks of a stream, joined: ids, text and routing rows decoded from base64.
struct JoinedReply {
  std::vector<int32_t> ids;
  std::string text;
  std::vector<int32_t> rows;  // [rows][layer][k] flattened
  int64_t num_rows = 0;
  int32_t cached_tokens = 0;
  std::optional<msg::FinishReason> finish;
  int chunks = 0;
};
JoinedReply join_reply(const std::vector<msg::TextOutput>& outputs);

// Golden ids, a length finish, and P+G-1 golden routing rows.
void expect_golden_reply(const Golden& golden, const GoldenCase& c, const JoinedReply& reply);

// expect_golden_reply for every case, replies[i] being case i's.
void expect_all_golden(const Golden& golden, const std::vector<JoinedReply>& replies);

// Sends every golden case at once (rid prefix + case index), optionally streamed, and returns each
// case's joined reply (failing the test when one takes over a minute).
std::vector<JoinedReply> send_all_cases_at_once(Client& client, const Golden& golden, const std::string& prefix,
                                                bool stream = false);

// Expert-load counts of `golden`'s model ([moe layer][expert]) with nothing counted.
ExpertLoad zero_expert_load(const Golden& golden, int num_experts);
// What the engine computed to answer `replies`: each reply's rows after its cached prompt tokens
// (a cache hit returns those rows from the host cache without a forward), each row's K experts
// counted once per layer.
ExpertLoad computed_expert_load(const Golden& golden, int num_experts, const std::vector<JoinedReply>& replies);
// Every MoE layer routes each counted token to K experts.
void expect_k_experts_per_token(const Golden& golden, const ExpertLoad& load);

// Polls the scheduler until nothing runs or waits (or `timeout` passes); returns its last stats.
SchedulerStats wait_until_idle(actors::EngineRuntime& runtime,
                               std::chrono::milliseconds timeout = std::chrono::seconds(20));

// A bare DEALER socket speaking the client protocol frame by frame.
class RawDealer {
 public:
  explicit RawDealer(const std::string& endpoint);
  ~RawDealer();
  void send_frame(const std::string& frame);
  void send(const msg::GenerateRequest& request) { send_frame(transport::encode_client_request(request)); }
  // The next reply, or nullopt when none came within `timeout`.
  std::optional<transport::ClientReply> receive(std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // Closes the socket at once (a client vanishing); unsent and unread frames are dropped.
  void close();

 private:
  std::unique_ptr<zmq::context_t> context_;
  std::unique_ptr<zmq::socket_t> socket_;
};

}  // namespace moe::testing
