#include "serving/load_generator.h"

#include <chrono>
#include <map>
#include <msgpack.hpp>
#include <random>
#include <zmq.hpp>

#include "common/error.h"

namespace moe::bench {
namespace {

using Clock = std::chrono::steady_clock;

// One streamed /generate-shaped request of random prompt ids.
zmq::message_t make_request(const std::string& rid, const LoadOptions& options, std::mt19937_64& rng) {
  std::uniform_int_distribution<int32_t> token(0, options.vocab_size - 1);
  std::vector<int32_t> ids(static_cast<size_t>(options.input_len));
  for (int32_t& id : ids) id = token(rng);
  msgpack::sbuffer buffer;
  msgpack::packer<msgpack::sbuffer> pack(buffer);
  pack.pack_map(5);
  pack.pack(std::string("rid")).pack(rid);
  pack.pack(std::string("input_ids")).pack(ids);
  pack.pack(std::string("stream")).pack(true);
  pack.pack(std::string("return_routed_experts")).pack(options.return_routed_experts);
  pack.pack(std::string("sampling_params"));
  pack.pack_map(3);
  pack.pack(std::string("max_new_tokens")).pack(options.output_len);
  pack.pack(std::string("ignore_eos")).pack(true);
  pack.pack(std::string("temperature")).pack(0.0);
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

// What one reply frame says about its request.
struct Chunk {
  std::string rid;
  int new_tokens = 0;
  bool finished = false;
  std::string error;
};

Chunk parse_reply(const zmq::message_t& frame) {
  const msgpack::object_handle handle = msgpack::unpack(static_cast<const char*>(frame.data()), frame.size());
  const msgpack::object& reply = handle.get();
  Chunk chunk;
  if (const msgpack::object* error = find(reply, "error")) {
    const msgpack::object* rid = find(*error, "rid");
    const msgpack::object* message = find(*error, "message");
    chunk.rid = rid ? rid->as<std::string>() : "";
    chunk.error = message ? message->as<std::string>() : "error reply";
    chunk.finished = true;
    return chunk;
  }
  const msgpack::object* meta = find(reply, "meta_info");
  if (!meta) throw Error("moe-bench: a reply without meta_info");
  chunk.rid = find(*meta, "id")->as<std::string>();
  if (const msgpack::object* ids = find(reply, "output_ids"); ids && ids->type == msgpack::type::ARRAY)
    chunk.new_tokens = static_cast<int>(ids->via.array.size);
  const msgpack::object* finish = find(*meta, "finish_reason");
  chunk.finished = finish && finish->type != msgpack::type::NIL;
  return chunk;
}

// Sends `count` requests with the given prefix and records them until all have finished.
std::vector<RequestRecord> drive(zmq::socket_t& socket, const LoadOptions& options, int count, const std::string& prefix,
                                 std::mt19937_64& rng, Clock::time_point start) {
  std::vector<RequestRecord> records(static_cast<size_t>(count));
  std::map<std::string, size_t> in_flight;
  std::exponential_distribution<double> gap(options.request_rate > 0 ? options.request_rate : 1.0);
  double next_send = 0;  // seconds since start, Poisson mode
  int sent = 0, done = 0;
  auto now = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  while (done < count) {
    const bool slot_free = static_cast<int>(in_flight.size()) < options.concurrency;
    const bool due = options.request_rate <= 0 || now() >= next_send;
    if (sent < count && slot_free && due) {
      const std::string rid = prefix + std::to_string(sent);
      records[sent].sent = now();
      socket.send(make_request(rid, options, rng), zmq::send_flags::none);
      in_flight[rid] = static_cast<size_t>(sent++);
      if (options.request_rate > 0) next_send += gap(rng);
      continue;
    }
    int timeout_ms = -1;
    if (sent < count && slot_free) timeout_ms = std::max(0, static_cast<int>((next_send - now()) * 1000));
    zmq::pollitem_t item{static_cast<void*>(socket), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, std::chrono::milliseconds(timeout_ms));
    zmq::message_t frame;
    while (socket.recv(frame, zmq::recv_flags::dontwait)) {
      const Chunk chunk = parse_reply(frame);
      const auto it = in_flight.find(chunk.rid);
      if (it == in_flight.end()) continue;  // a reply to nothing we track (e.g. an error without rid)
      RequestRecord& record = records[it->second];
      const double t = now();
      record.token_times.insert(record.token_times.end(), static_cast<size_t>(chunk.new_tokens), t);
      record.error = chunk.error;
      if (!chunk.finished) continue;
      record.finished = t;
      in_flight.erase(it);
      ++done;
    }
  }
  return records;
}

}  // namespace

std::vector<RequestRecord> run_load(const LoadOptions& options, double& duration_seconds) {
  if (options.concurrency < 1) throw Error("moe-bench: --concurrency must be at least 1");
  zmq::context_t context;
  zmq::socket_t socket(context, zmq::socket_type::dealer);
  socket.set(zmq::sockopt::linger, 0);
  socket.connect(options.endpoint);
  std::mt19937_64 rng(options.seed);
  LoadOptions warmup = options;
  warmup.request_rate = 0;
  drive(socket, warmup, options.warmup_prompts, "warmup-", rng, Clock::now());
  const Clock::time_point start = Clock::now();
  std::vector<RequestRecord> records = drive(socket, options, options.num_prompts, "req-", rng, start);
  duration_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return records;
}

}  // namespace moe::bench
