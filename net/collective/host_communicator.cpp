#include "collective/host_communicator.h"

#include <cerrno>
#include <cstring>
#include <optional>
#include <random>
#include <vector>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "common/error.h"
#include "transport/internal_socket_auth.h"
#include "transport/zmq_context.h"

namespace moe::collective {
namespace {

// What a frame is; every message is [header, payload] (the hub's ROUTER adds the sender's id first).
enum class Kind : uint8_t { Hello = 1, Welcome, Refused, Part, Result, Broadcast };

struct Header {
  Kind kind;
  int32_t rank;    // the sender's rank (hello: the rank it claims), or the receiver's for the hub's answers
  int32_t size;    // the group size the sender believes in
  uint64_t seq;    // the collective's number, counted alike on every rank
};

zmq::message_t header_frame(Kind kind, int rank, int size, uint64_t seq) {
  const Header h{kind, rank, size, seq};
  return zmq::message_t(&h, sizeof h);
}

Header read_header(const zmq::message_t& frame) {
  if (frame.size() != sizeof(Header)) throw Error("the host communicator received a malformed frame");
  Header h;
  std::memcpy(&h, frame.data(), sizeof h);
  return h;
}

std::string seconds(std::chrono::milliseconds wait) {
  return wait.count() % 1000 ? std::to_string(wait.count()) + " ms" : std::to_string(wait.count() / 1000) + " s";
}

std::string str(const zmq::message_t& frame) { return std::string(static_cast<const char*>(frame.data()), frame.size()); }

}  // namespace

struct HostCommunicator::State {
  GroupOptions options;
  std::unique_ptr<transport::Context> own_context;  // when the options bring none
  zmq::context_t* context = nullptr;                 // the options' or own_context's
  zmq::socket_t socket;
  // ZeroMQ's reports of `socket`'s connections closing: a peer that stopped is noticed at once, not
  // only when a wait runs out.
  zmq::socket_t monitor;
  bool peer_lost = false;  // set by receive when the monitor reported a closed connection
  std::string endpoint;
  std::string welcome;
  std::vector<std::string> ids;  // the hub: each rank's routing id, by rank
  uint64_t seq = 0;
  std::string broken;  // why the group can no longer compute (set once a collective failed)

  std::string member(int rank) const {
    return options.member_name ? options.member_name(rank) : options.name + " " + std::to_string(rank);
  }

  [[noreturn]] void fail(const std::string& why) {
    broken = why;
    throw Error(why);
  }
  void check_intact() const {
    if (!broken.empty()) throw Error(broken + " (every rank must be restarted)");
  }

  // Reports of closed connections from now on reach `monitor`.
  void watch_connections() {
    const std::string address = "inproc://host-communicator-" + std::to_string(reinterpret_cast<uintptr_t>(this));
    if (zmq_socket_monitor(socket.handle(), address.c_str(), ZMQ_EVENT_DISCONNECTED) != 0)
      throw Error("the host communicator could not watch its connections");
    monitor = zmq::socket_t(*context, zmq::socket_type::pair);
    monitor.set(zmq::sockopt::linger, 0);
    monitor.connect(address);
  }

  // One message within `timeout`; nullopt when none came, with peer_lost set when a connection closed.
  std::optional<std::vector<zmq::message_t>> receive(std::chrono::milliseconds timeout) {
    zmq::pollitem_t items[] = {{static_cast<void*>(socket), 0, ZMQ_POLLIN, 0},
                               {static_cast<void*>(monitor), 0, ZMQ_POLLIN, 0}};
    try {
      if (zmq::poll(items, 2, timeout) == 0) return std::nullopt;
    } catch (const zmq::error_t& e) {
      if (e.num() != EINTR) throw;
      return std::nullopt;  // a signal: the caller decides whether to wait on
    }
    if (!(items[0].revents & ZMQ_POLLIN)) {
      std::vector<zmq::message_t> event;
      (void)zmq::recv_multipart(monitor, std::back_inserter(event));
      peer_lost = true;
      return std::nullopt;
    }
    std::vector<zmq::message_t> frames;
    (void)zmq::recv_multipart(socket, std::back_inserter(frames));
    return frames;
  }

  // One message before `deadline`, or nullopt.
  std::optional<std::vector<zmq::message_t>> receive_by(std::chrono::steady_clock::time_point deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    return left.count() > 0 ? receive(left) : std::nullopt;
  }

  // The hub: the members (ranks 1..) not marked in `present`, listed for an error.
  std::string absent(const std::vector<bool>& present) const {
    std::string names;
    for (int r = 1; r < options.size; ++r)
      if (!present[static_cast<size_t>(r)]) names += (names.empty() ? "" : ", ") + member(r);
    return names;
  }

  void send(std::vector<zmq::message_t> frames) { zmq::send_multipart(socket, frames); }

  // The hub: sends the peer of routing id `id` (rank `rank`) a header and payload.
  void send_to_id(const std::string& id, int rank, Kind kind, const void* payload, size_t bytes) {
    std::vector<zmq::message_t> frames;
    frames.emplace_back(id.data(), id.size());
    frames.push_back(header_frame(kind, rank, options.size, seq));
    frames.emplace_back(payload, bytes);
    send(std::move(frames));
  }
  void send_to(int rank, Kind kind, const void* payload, size_t bytes) {
    send_to_id(ids[static_cast<size_t>(rank)], rank, kind, payload, bytes);
  }

  // The hub: every other rank's part of collective `seq`, by rank (index 0 unused), each `bytes` long.
  std::vector<zmq::message_t> gather_parts(size_t bytes) {
    std::vector<zmq::message_t> parts(static_cast<size_t>(options.size));
    std::vector<bool> arrived(parts.size(), false);
    int missing = options.size - 1;
    const auto deadline = std::chrono::steady_clock::now() + options.timeout;
    while (missing > 0) {
      auto frames = receive_by(deadline);
      if (!frames && peer_lost) fail(absent(arrived) + " stopped (its connection closed) during a collective");
      if (!frames) {
        fail(absent(arrived) + " did not take part in a collective within " + std::to_string(options.timeout.count()) +
             " ms (stopped or too slow)");
      }
      if (frames->size() != 3) fail("the host communicator received a malformed message");
      const Header h = read_header((*frames)[1]);
      const std::string id = str((*frames)[0]);
      const int rank = h.rank;
      if (rank < 1 || rank >= options.size || ids[static_cast<size_t>(rank)] != id)
        fail("a process that is not a member of the group sent to rank 0 (rank " + std::to_string(rank) + ")");
      if (h.kind == Kind::Hello) fail(member(rank) + " joined again (it was restarted): the group must restart");
      if (h.kind != Kind::Part || h.seq != seq || arrived[static_cast<size_t>(rank)])
        fail(member(rank) + " is out of step with rank 0 (collective " + std::to_string(h.seq) + ", rank 0 is at " +
             std::to_string(seq) + ")");
      if ((*frames)[2].size() != bytes)
        fail(member(rank) + " sent " + std::to_string((*frames)[2].size()) + " bytes to a collective of " +
             std::to_string(bytes) + " per rank");
      parts[static_cast<size_t>(rank)] = std::move((*frames)[2]);
      arrived[static_cast<size_t>(rank)] = true;
      --missing;
    }
    return parts;
  }

  // A non-hub rank: sends its part of collective `seq` and returns the hub's result (`bytes` long).
  zmq::message_t exchange(const void* part, size_t part_bytes, size_t result_bytes) {
    std::vector<zmq::message_t> frames;
    frames.push_back(header_frame(Kind::Part, options.rank, options.size, seq));
    frames.emplace_back(part, part_bytes);
    send(std::move(frames));
    auto answer = receive(options.timeout);
    if (!answer && peer_lost) fail(member(0) + " stopped (its connection closed) during a collective");
    if (!answer)
      fail(member(0) + " did not answer a collective within " + std::to_string(options.timeout.count()) +
           " ms (stopped, or another rank did not take part)");
    if (answer->size() != 2) fail("the host communicator received a malformed message");
    const Header h = read_header((*answer)[0]);
    if (h.kind != Kind::Result || h.seq != seq || (*answer)[1].size() != result_bytes)
      fail(member(options.rank) + " is out of step with rank 0 (collective " + std::to_string(seq) + ")");
    return std::move((*answer)[1]);
  }

  void join_as_hub(const JoinOptions& join);
  void join_as_member(const JoinOptions& join);
};

HostCommunicator::HostCommunicator(GroupOptions options) : state_(std::make_unique<State>()) {
  State& s = *state_;
  if (options.size < 1 || options.rank < 0 || options.rank >= options.size)
    throw Error(options.name + " " + std::to_string(options.rank) + " is outside a group of " +
                std::to_string(options.size));
  s.options = std::move(options);
  if (s.options.context == nullptr) s.own_context = std::make_unique<transport::Context>();
  transport::Context& context = s.options.context ? *s.options.context : *s.own_context;
  s.context = &context.native();
  const bool hub = s.options.rank == 0;
  s.socket = zmq::socket_t(*s.context, hub ? zmq::socket_type::router : zmq::socket_type::dealer);
  s.socket.set(zmq::sockopt::linger, 0);
  transport::use_internal_key(context, s.socket, s.options.endpoint, hub);
  if (hub) {
    s.socket.bind(s.options.endpoint);
    s.endpoint = s.socket.get(zmq::sockopt::last_endpoint);
    s.ids.resize(static_cast<size_t>(s.options.size));
  } else {
    // Unique per process, so that two processes given one rank both reach the hub (and are refused).
    s.socket.set(zmq::sockopt::routing_id,
                 "rank-" + std::to_string(s.options.rank) + "-" + std::to_string(std::random_device{}()));
    s.socket.connect(s.options.endpoint);
    s.endpoint = s.options.endpoint;
  }
  s.watch_connections();
}

HostCommunicator::~HostCommunicator() = default;

const std::string& HostCommunicator::endpoint() const { return state_->endpoint; }
const std::string& HostCommunicator::welcome() const { return state_->welcome; }
int HostCommunicator::rank() const { return state_->options.rank; }
int HostCommunicator::size() const { return state_->options.size; }

void HostCommunicator::join(const JoinOptions& join) {
  if (state_->options.rank == 0) state_->welcome = join.welcome;
  if (state_->options.size == 1) return;
  if (state_->options.rank == 0)
    state_->join_as_hub(join);
  else
    state_->join_as_member(join);
}

void HostCommunicator::State::join_as_hub(const JoinOptions& join) {
  std::vector<bool> joined(static_cast<size_t>(options.size), false);
  int missing = options.size - 1;
  // Why the group cannot form, told to every member once all are there (or the wait ends), so that
  // each learns the same reason; a process that cannot be a member is answered at once.
  std::string refusal;
  auto add_reason = [&](const std::string& why) { refusal += (refusal.empty() ? "" : "; ") + why; };
  const auto deadline = std::chrono::steady_clock::now() + join.timeout;
  while (missing > 0) {
    auto frames = receive_by(deadline);
    if (!frames && peer_lost) {
      peer_lost = false;  // a process that was refused, or left before the group formed
      continue;
    }
    if (!frames) {
      add_reason(absent(joined) + " of " + std::to_string(options.size) + " did not join at " + endpoint + " within " +
                 seconds(join.timeout));
      break;
    }
    if (frames->size() != 3) continue;  // not one of ours
    const Header h = read_header((*frames)[1]);
    if (h.kind != Kind::Hello) continue;
    const int rank = h.rank;
    std::string stranger;
    if (h.size != options.size)
      stranger = member(rank) + " was started for a group of " + std::to_string(h.size) + " but rank 0's has " +
                 std::to_string(options.size);
    else if (rank < 1 || rank >= options.size)
      stranger = member(rank) + " is outside the group of " + std::to_string(options.size) + " (ranks 1 to " +
                 std::to_string(options.size - 1) + " join rank 0)";
    else if (joined[static_cast<size_t>(rank)])
      stranger = member(rank) + " joined twice (two processes were given that rank)";
    if (!stranger.empty()) {
      send_to_id(str((*frames)[0]), rank, Kind::Refused, stranger.data(), stranger.size());
      add_reason(stranger);
      continue;
    }
    ids[static_cast<size_t>(rank)] = str((*frames)[0]);
    joined[static_cast<size_t>(rank)] = true;
    --missing;
    if (join.check) {
      const std::string why = join.check(rank, str((*frames)[2]));
      if (!why.empty()) add_reason(member(rank) + " differs from rank 0: " + why);
    }
  }
  const bool refused = !refusal.empty();
  const std::string& answer = refused ? refusal : welcome;
  for (int r = 1; r < options.size; ++r)
    if (joined[static_cast<size_t>(r)]) send_to(r, refused ? Kind::Refused : Kind::Welcome, answer.data(), answer.size());
  if (refused) fail(refusal);
}

void HostCommunicator::State::join_as_member(const JoinOptions& join) {
  std::vector<zmq::message_t> frames;
  frames.push_back(header_frame(Kind::Hello, options.rank, options.size, 0));
  frames.emplace_back(join.hello.data(), join.hello.size());
  send(std::move(frames));
  const auto deadline = std::chrono::steady_clock::now() + join.timeout;
  std::optional<std::vector<zmq::message_t>> answer;
  while (!(answer = receive_by(deadline))) {
    if (!peer_lost)
      fail(member(0) + " at " + endpoint + " did not accept " + member(options.rank) + " within " + seconds(join.timeout));
    peer_lost = false;  // rank 0 went before answering; one started again may still answer
  }
  if (answer->size() != 2) fail("the host communicator received a malformed message");
  const Header h = read_header((*answer)[0]);
  if (h.kind == Kind::Refused) fail(str((*answer)[1]));
  if (h.kind != Kind::Welcome) fail(member(options.rank) + " is out of step with rank 0 at the join");
  welcome = str((*answer)[1]);
}

void HostCommunicator::all_reduce_sum(float* data, int64_t count) {
  State& s = *state_;
  if (s.options.size == 1) return;
  s.check_intact();
  ++s.seq;
  const size_t bytes = static_cast<size_t>(count) * sizeof(float);
  if (s.options.rank != 0) {
    const zmq::message_t total = s.exchange(data, bytes, bytes);
    std::memcpy(data, total.data(), bytes);
    return;
  }
  const std::vector<zmq::message_t> parts = s.gather_parts(bytes);
  for (int r = 1; r < s.options.size; ++r) {
    const float* part = static_cast<const float*>(parts[static_cast<size_t>(r)].data());
    for (int64_t i = 0; i < count; ++i) data[i] += part[i];
  }
  for (int r = 1; r < s.options.size; ++r) s.send_to(r, Kind::Result, data, bytes);
}

void HostCommunicator::all_gather(const void* in, size_t bytes, void* out) {
  State& s = *state_;
  auto* joined = static_cast<char*>(out);
  std::memmove(joined + static_cast<size_t>(s.options.rank) * bytes, in, bytes);
  if (s.options.size == 1) return;
  s.check_intact();
  ++s.seq;
  const size_t total = bytes * static_cast<size_t>(s.options.size);
  if (s.options.rank != 0) {
    const zmq::message_t all = s.exchange(in, bytes, total);
    std::memcpy(out, all.data(), total);
    return;
  }
  const std::vector<zmq::message_t> parts = s.gather_parts(bytes);
  for (int r = 1; r < s.options.size; ++r)
    std::memcpy(joined + static_cast<size_t>(r) * bytes, parts[static_cast<size_t>(r)].data(), bytes);
  for (int r = 1; r < s.options.size; ++r) s.send_to(r, Kind::Result, out, total);
}

bool HostCommunicator::broadcast(std::string& bytes, const std::function<bool()>& keep_waiting) {
  State& s = *state_;
  if (s.options.size == 1) return true;
  s.check_intact();
  if (s.options.rank == 0) {
    ++s.seq;
    for (int r = 1; r < s.options.size; ++r) s.send_to(r, Kind::Broadcast, bytes.data(), bytes.size());
    return true;
  }
  std::optional<std::vector<zmq::message_t>> message;
  while (!(message = s.receive(std::chrono::milliseconds(200)))) {
    if (s.peer_lost) s.fail(s.member(0) + " stopped (its connection closed)");
    if (!keep_waiting()) return false;
  }
  ++s.seq;
  if (message->size() != 2) s.fail("the host communicator received a malformed message");
  const Header h = read_header((*message)[0]);
  if (h.kind != Kind::Broadcast || h.seq != s.seq)
    s.fail(s.member(s.options.rank) + " is out of step with rank 0 (collective " + std::to_string(s.seq) + ")");
  bytes = str((*message)[1]);
  return true;
}

}  // namespace moe::collective
