#include "transport/client_protocol.h"

#include "transport/client_values.h"

namespace moe::transport {
namespace {

using detail::FieldPath;

// The `op` that names an expert-load request; a map without `op` (or with "generate") is a generation.
constexpr std::string_view kExpertLoadOp = "expert_load";

// The request's rid when it gave one as a string, else empty: error replies carry it.
std::string rid_of(const msgpack::object& map) {
  const msgpack::object* rid = detail::find_key(map, "rid");
  return rid && rid->type == msgpack::type::STR ? std::string(rid->via.str.ptr, rid->via.str.size) : std::string();
}

msg::GenerateRequest parse_generate(const msgpack::object& map, const FieldPath& path) {
  msg::GenerateRequest request;
  detail::read_client_map(map, request, path);
  const int prompts_given = int{request.text.has_value()} + int{request.input_ids.has_value()} +
                            int{request.messages.has_value()};
  if (prompts_given == 0) throw Error("request: needs `text` or `input_ids` (or chat `messages`)");
  if (prompts_given > 1) throw Error("request: give only one of `text`, `input_ids`, `messages`");
  return request;
}

ClientRequest parse_map(const msgpack::object& map, const FieldPath& path) {
  std::string op = "generate";
  detail::read_entry(map, "op", op, path);
  if (op == "generate") return parse_generate(map, path);
  if (op == kExpertLoadOp) {
    ExpertLoadRequest request;
    detail::read_client_map(map, request, path);
    return request;
  }
  detail::fail(path.field("op"), "unknown operation \"" + op + "\" (known: \"generate\", \"expert_load\")");
}

}  // namespace

ClientRequest parse_client_request(std::string_view frame) {
  std::string rid;
  try {
    const msgpack::object_handle handle = detail::unpack_frame(frame, "request");
    const FieldPath path{nullptr, "request"};
    if (handle.get().type != msgpack::type::MAP) detail::fail_type(path, "a map", handle.get());
    rid = rid_of(handle.get());
    return parse_map(handle.get(), path);
  } catch (const Error& e) {
    throw ClientRequestError(rid, e.what());
  }
}

std::string encode_client_request(const msg::GenerateRequest& request) {
  detail::StringSink sink;
  detail::Packer packer(sink);
  detail::write_client_map(packer, request);
  return std::move(sink.bytes);
}

std::string encode_client_request(const ExpertLoadRequest& request) {
  detail::StringSink sink;
  detail::Packer packer(sink);
  packer.pack_map(3);
  detail::write_str(packer, "op");
  detail::write_str(packer, kExpertLoadOp);
  detail::write_str(packer, "rid");
  detail::write_str(packer, request.rid);
  detail::write_str(packer, "reset");
  packer.pack(request.reset);
  return std::move(sink.bytes);
}

}  // namespace moe::transport
