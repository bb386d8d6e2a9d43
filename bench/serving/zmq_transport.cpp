#include "serving/zmq_transport.h"

#include <msgpack.hpp>
#include <unordered_map>
#include <zmq.hpp>

#include "common/error.h"

namespace moe::bench {
namespace {

// A streamed /generate-shaped request map.
zmq::message_t encode_request(const std::string& rid, const BenchRequest& request) {
  msgpack::sbuffer buffer;
  msgpack::packer<msgpack::sbuffer> pack(buffer);
  pack.pack_map(5);
  pack.pack(std::string("rid")).pack(rid);
  pack.pack(std::string("input_ids")).pack(request.input_ids);
  pack.pack(std::string("stream")).pack(true);
  pack.pack(std::string("return_routed_experts")).pack(request.return_routed_experts);
  pack.pack(std::string("sampling_params"));
  pack.pack_map(3);
  pack.pack(std::string("max_new_tokens")).pack(request.output_len);
  pack.pack(std::string("ignore_eos")).pack(true);
  pack.pack(std::string("temperature")).pack(request.temperature);
  return zmq::message_t(buffer.data(), buffer.size());
}

const msgpack::object* find(const msgpack::object& map, const char* key) {
  if (map.type != msgpack::type::MAP) return nullptr;
  for (uint32_t i = 0; i < map.via.map.size; ++i) {
    const msgpack::object_kv& kv = map.via.map.ptr[i];
    if (kv.key.type == msgpack::type::STR && kv.key.as<std::string>() == key) return &kv.val;
  }
  return nullptr;
}

// What one reply frame says about the request it names.
struct Reply {
  std::string rid;
  int new_tokens = 0;
  bool finished = false;
  std::string error;
};

Reply decode_reply(const zmq::message_t& frame) {
  const msgpack::object_handle handle = msgpack::unpack(static_cast<const char*>(frame.data()), frame.size());
  const msgpack::object& map = handle.get();
  Reply reply;
  if (const msgpack::object* error = find(map, "error")) {
    const msgpack::object* rid = find(*error, "rid");
    const msgpack::object* message = find(*error, "message");
    reply.rid = rid ? rid->as<std::string>() : "";
    reply.error = message ? message->as<std::string>() : "error reply";
    reply.finished = true;
    return reply;
  }
  const msgpack::object* meta = find(map, "meta_info");
  if (!meta) throw Error("moe-bench: a ZeroMQ reply without meta_info");
  reply.rid = find(*meta, "id")->as<std::string>();
  // Streamed chunks carry only their new ids.
  if (const msgpack::object* ids = find(map, "output_ids"); ids && ids->type == msgpack::type::ARRAY)
    reply.new_tokens = static_cast<int>(ids->via.array.size);
  const msgpack::object* finish = find(*meta, "finish_reason");
  reply.finished = finish && finish->type != msgpack::type::NIL;
  return reply;
}

class ZmqTransport final : public StreamingTransport {
 public:
  explicit ZmqTransport(const std::string& endpoint) : socket_(context_, zmq::socket_type::dealer) {
    socket_.set(zmq::sockopt::linger, 0);
    socket_.connect(endpoint);
  }

  void send(uint64_t id, const BenchRequest& request) override {
    const std::string rid = rid_of(id);
    socket_.send(encode_request(rid, request), zmq::send_flags::none);
    in_flight_[rid] = id;
  }

  void wait(Clock::time_point deadline, std::vector<StreamEvent>& events) override {
    if (in_flight_.empty()) return;
    zmq::pollitem_t item{static_cast<void*>(socket_), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, poll_timeout(deadline));
    zmq::message_t frame;
    while (socket_.recv(frame, zmq::recv_flags::dontwait)) {
      const Clock::time_point at = Clock::now();
      const Reply reply = decode_reply(frame);
      const auto request = in_flight_.find(reply.rid);
      if (request == in_flight_.end()) continue;  // cancelled, or an error reply without rid
      events.push_back({request->second, at, reply.new_tokens, reply.finished, reply.error});
      if (reply.finished) in_flight_.erase(request);
    }
  }

  // The protocol has no abort message: the server finishes the request and its replies are dropped.
  void cancel(uint64_t id) override { in_flight_.erase(rid_of(id)); }

 private:
  static std::string rid_of(uint64_t id) { return "moe-bench-" + std::to_string(id); }

  // Milliseconds until `deadline`, rounded up so the poll never ends before it; -1 (forever) for max().
  static std::chrono::milliseconds poll_timeout(Clock::time_point deadline) {
    if (deadline == Clock::time_point::max()) return std::chrono::milliseconds(-1);
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    return std::max(std::chrono::milliseconds(0), left);
  }

  zmq::context_t context_;
  zmq::socket_t socket_;
  std::unordered_map<std::string, uint64_t> in_flight_;  // rid -> request id
};

}  // namespace

std::unique_ptr<StreamingTransport> make_zmq_transport(const std::string& endpoint) {
  return std::make_unique<ZmqTransport>(endpoint);
}

}  // namespace moe::bench
