#pragma once
// The communicator of CPU processes (one host or several), over ZeroMQ (tcp://, or ipc:// on one host;
// with the deployment's internal key, CURVE-authenticated: transport/internal_socket_auth.h): rank 0 binds a ROUTER at
// the group's endpoint, every other rank connects a DEALER to it. Rank 0 is the hub of every
// collective: it receives each rank's part, combines them in rank order and sends the result back, so
// an all-reduce adds exactly as the one-process path does (communicator.h), whatever the timing.
//
// Joining is the group's handshake: each rank sends its rank, the group size and a `hello` (the
// settings it runs with); rank 0 checks every hello with `check` and answers every rank either its
// `welcome` bytes (what the others need from rank 0, such as NCCL's unique id) or why the group is
// refused. A rank that does not join within the timeout, a rank twice, or a rank out of range stops the
// start of every rank that joined, with an error naming it.
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "parallel/communicator.h"

namespace moe::transport {
class Context;
}

namespace moe::collective {

struct GroupOptions {
  std::string endpoint;  // rank 0 binds it (tcp://HOST:PORT; port * picks a free one), the others connect
  int rank = 0;
  int size = 1;
  std::string name = "rank";  // how errors name a member, e.g. "expert-parallel rank"
  // How errors name rank r when given (a rank of a two-dimensional group names both coordinates);
  // otherwise name + " " + r.
  std::function<std::string(int rank)> member_name;
  // The process's ZeroMQ context, whose internal key (if any) authenticates the ranks; null: a
  // context of the communicator's own, without a key. It must outlive the communicator.
  transport::Context* context = nullptr;
  // Longest wait inside a collective for the other ranks' parts (or rank 0's answer).
  std::chrono::milliseconds timeout{60000};
};

// What a rank brings to the join.
struct JoinOptions {
  std::string hello;  // this rank's credentials, checked by rank 0
  // Rank 0: "" accepts rank r's hello, anything else is why the group is refused.
  std::function<std::string(int rank, const std::string& hello)> check;
  std::string welcome;  // rank 0: handed to every other rank once all are accepted
  std::chrono::milliseconds timeout{60000};  // longest wait for the others to join
};

class HostCommunicator final : public Communicator {
 public:
  // Binds (rank 0) or connects; join() completes the group.
  explicit HostCommunicator(GroupOptions options);
  ~HostCommunicator() override;

  // Rank 0's bound endpoint, its port resolved (what the other ranks are given).
  const std::string& endpoint() const;
  // Blocks until every rank joined and was accepted; a moe::Error naming the rank otherwise.
  void join(const JoinOptions& join = {});
  // What rank 0 handed out at the join (rank 0: its own welcome).
  const std::string& welcome() const;

  int rank() const override;
  int size() const override;
  void all_reduce_sum(float* data, int64_t count) override;
  void all_gather(const void* in, size_t bytes, void* out) override;
  // Rank 0's `bytes` reach every rank (rank 0's are left as they are, the others' replaced). The other
  // ranks wait without a timeout (an idle server sends nothing) until `keep_waiting` says false, then
  // get false back; true once the bytes arrived.
  bool broadcast(std::string& bytes, const std::function<bool()>& keep_waiting = [] { return true; });

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace moe::collective
