// The answers to the client protocol's operations (expert_load, abort, update_weights_from_disk,
// pause_generation, continue_generation): each a map whose meta_info.id is the operation's rid, as generation replies
// carry theirs.
#include "transport/client_protocol.h"

#include "common/error.h"
#include "transport/client_values.h"

namespace moe::transport {
namespace {

using detail::FieldPath;
using detail::find_key;
using detail::Packer;
using detail::read_entry;
using detail::require_map;
using detail::write_str;

// The rid under meta_info.id, which every answer to an operation carries.
std::string read_meta_id(const msgpack::object& root, const FieldPath& path) {
  std::string rid;
  if (const msgpack::object* meta = find_key(root, "meta_info")) {
    if (meta->type != msgpack::type::MAP) detail::fail_type(path.field("meta_info"), "a map", *meta);
    read_entry(*meta, "id", rid, path.field("meta_info"));
  }
  return rid;
}

// An operation's answer: a map of `entries` entries that `write` packs, then {"meta_info": {"id": rid}}.
template <class WriteEntries>
std::string operation_reply(uint32_t entries, const std::string& rid, WriteEntries write) {
  detail::StringSink sink;
  Packer packer(sink);
  packer.pack_map(entries + 1);
  write(packer);
  write_str(packer, "meta_info");
  packer.pack_map(1);
  write_str(packer, "id");
  write_str(packer, rid);
  return std::move(sink.bytes);
}

}  // namespace

namespace detail {

// The inverse of encode_expert_load_reply; counts must be num_moe_layers rows of num_experts.
ExpertLoadReply read_expert_load(const msgpack::object& root, const FieldPath& path) {
  ExpertLoadReply reply;
  reply.rid = read_meta_id(root, path);
  const FieldPath load_path = path.field("expert_load");
  const msgpack::object& load = require_map(root, "expert_load", path);
  size_t layers = 0, experts = 0;
  read_entry(load, "num_moe_layers", layers, load_path);
  read_entry(load, "num_experts", experts, load_path);
  read_entry(load, "tokens", reply.load.tokens, load_path);
  read_entry(load, "counts", reply.load.counts, load_path);
  bool rectangular = reply.load.counts.size() == layers;
  for (const auto& layer : reply.load.counts) rectangular = rectangular && layer.size() == experts;
  if (!rectangular)
    detail::fail(load_path.field("counts"), "expected " + std::to_string(layers) + " layers of " +
                                                std::to_string(experts) + " experts");
  return reply;
}

// The inverse of encode_abort_reply.
AbortReply read_abort(const msgpack::object& root, const FieldPath& path) {
  AbortReply reply;
  reply.rid = read_meta_id(root, path);
  const msgpack::object& abort = require_map(root, "abort", path);
  read_entry(abort, "aborted", reply.aborted, path.field("abort"));
  return reply;
}

// The inverse of encode_weights_updated_reply.
WeightsUpdatedReply read_weights_updated(const msgpack::object& root, const FieldPath& path) {
  WeightsUpdatedReply reply;
  reply.rid = read_meta_id(root, path);
  read_entry(root, "success", reply.answer.success, path);
  read_entry(root, "message", reply.answer.message, path);
  read_entry(root, "weight_version", reply.answer.weight_version, path);
  return reply;
}

// The inverse of encode_generation_control_reply.
GenerationControlReply read_generation_control(const msgpack::object& root, const FieldPath& path) {
  GenerationControlReply reply;
  reply.rid = read_meta_id(root, path);
  read_entry(root, "message", reply.message, path);
  return reply;
}

}  // namespace detail

std::string encode_expert_load_reply(const ExpertLoadReply& reply) {
  return operation_reply(1, reply.rid, [&](Packer& packer) {
    write_str(packer, "expert_load");
    packer.pack_map(4);
    write_str(packer, "num_moe_layers");
    packer.pack(reply.load.counts.size());
    write_str(packer, "num_experts");
    packer.pack(reply.load.counts.empty() ? size_t{0} : reply.load.counts.front().size());
    write_str(packer, "tokens");
    packer.pack(reply.load.tokens);
    write_str(packer, "counts");
    detail::write_client_value(packer, reply.load.counts);
  });
}

std::string encode_abort_reply(const AbortReply& reply) {
  return operation_reply(1, reply.rid, [&](Packer& packer) {
    write_str(packer, "abort");
    packer.pack_map(2);
    write_str(packer, "rid");
    write_str(packer, reply.rid);
    write_str(packer, "aborted");
    packer.pack(reply.aborted);
  });
}

std::string encode_weights_updated_reply(const WeightsUpdatedReply& reply) {
  return operation_reply(3, reply.rid, [&](Packer& packer) {
    write_str(packer, "success");
    packer.pack(reply.answer.success);
    write_str(packer, "message");
    write_str(packer, reply.answer.message);
    write_str(packer, "weight_version");
    write_str(packer, reply.answer.weight_version);
  });
}

std::string encode_generation_control_reply(const GenerationControlReply& reply) {
  return operation_reply(2, reply.rid, [&](Packer& packer) {
    write_str(packer, "message");
    write_str(packer, reply.message);
    write_str(packer, "status");
    write_str(packer, "ok");
  });
}

}  // namespace moe::transport
