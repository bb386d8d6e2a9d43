#include "transport/client_protocol.h"

#include "common/utf8.h"
#include "transport/client_values.h"

namespace moe::transport {
namespace {

using detail::FieldPath;

// The `op`s that name the operations; a map without `op` (or with "generate") is a generation.
constexpr std::string_view kExpertLoadOp = "expert_load";
constexpr std::string_view kAbortOp = "abort";
constexpr std::string_view kUpdateWeightsOp = "update_weights_from_disk";
constexpr std::string_view kPauseOp = "pause_generation";
constexpr std::string_view kContinueOp = "continue_generation";
constexpr std::string_view kGetVersionOp = "get_weight_version";
constexpr std::string_view kUpdateVersionOp = "update_weight_version";
constexpr std::string_view kReleaseMemoryOp = "release_memory_occupation";
constexpr std::string_view kResumeMemoryOp = "resume_memory_occupation";
constexpr std::string_view kInitWeightGroupOp = "init_weights_update_group";
constexpr std::string_view kUpdateFromWeightGroupOp = "update_weights_from_distributed";
constexpr std::string_view kDestroyWeightGroupOp = "destroy_weights_update_group";

// The request's rid when it gave one as a string, else empty: error replies carry it.
std::string rid_of(const msgpack::object& map) {
  const msgpack::object* rid = detail::find_key(map, "rid");
  return rid && rid->type == msgpack::type::STR ? std::string(rid->via.str.ptr, rid->via.str.size) : std::string();
}

msg::GenerateRequest parse_generate(const msgpack::object& map, const FieldPath& path) {
  msg::GenerateRequest request;
  detail::read_client_map(map, request, path);  // the front door checks the values (one prompt, ranges)
  const msgpack::object* sampling = detail::find_key(map, "sampling_params");
  if (sampling != nullptr && sampling->type == msgpack::type::MAP && detail::find_key(*sampling, "max_new_tokens"))
    request.field_names.max_new_tokens = "sampling_params.max_new_tokens";
  // SGLang's name for the seed, read beside `seed` (the struct's name, which encoding writes).
  std::optional<uint64_t> sampling_seed;
  if (sampling != nullptr && sampling->type == msgpack::type::MAP)
    detail::read_entry(*sampling, "sampling_seed", sampling_seed, path.field("sampling_params"));
  if (sampling_seed) {
    if (request.sampling.seed && *request.sampling.seed != *sampling_seed)
      detail::fail(path.field("sampling_params").field("sampling_seed"), "differs from `seed`: give one of the two");
    request.sampling.seed = sampling_seed;
  }
  return request;
}

// An operation's fields; `op` itself is not one of them, so the reader skips it.
template <class Request>
Request parse_op(const msgpack::object& map, const FieldPath& path) {
  Request request;
  detail::read_client_map(map, request, path);
  return request;
}

// Validation at the front door: what the operation cannot do without.
AbortRequest checked(AbortRequest request, const FieldPath& path) {
  if (request.rid.empty()) detail::fail(path.field("rid"), "the request to abort must be named");
  return request;
}

UpdateWeightsRequest checked(UpdateWeightsRequest request, const FieldPath& path) {
  if (request.update.model_path.empty()) detail::fail(path.field("model_path"), "must name a checkpoint directory");
  if (!request.flush_cache)
    detail::fail(path.field("flush_cache"), "must be true: new weights always flush the prefix cache");
  return request;
}

// A weight-group call's checks (the HTTP parser's too), naming the field under `path`.
msg::UpdateWeights checked_group_call(msg::UpdateWeights update, const FieldPath& path) {
  if (const auto problem = check_weight_group_call(update.group)) detail::fail(path.field(problem->field), problem->why);
  return update;
}

InitWeightGroupRequest checked(InitWeightGroupRequest request, const FieldPath& path) {
  if (request.backend != "nccl") detail::fail(path.field("backend"), "must be \"nccl\" (the only backend served)");
  request.update = checked_group_call(std::move(request.update), path);
  return request;
}

UpdateFromWeightGroupRequest checked(UpdateFromWeightGroupRequest request, const FieldPath& path) {
  if (!request.flush_cache)
    detail::fail(path.field("flush_cache"), "must be true: new weights always flush the prefix cache");
  request.update = checked_group_call(std::move(request.update), path);
  return request;
}

DestroyWeightGroupRequest checked(DestroyWeightGroupRequest request, const FieldPath& path) {
  request.update = checked_group_call(std::move(request.update), path);
  return request;
}

UpdateWeightVersionRequest checked(UpdateWeightVersionRequest request, const FieldPath& path) {
  if (request.new_version.empty()) detail::fail(path.field("new_version"), "must name the new version");
  return request;
}

ClientRequest parse_map(const msgpack::object& map, const FieldPath& path) {
  std::string op = "generate";
  detail::read_entry(map, "op", op, path);
  if (!is_valid_utf8(op)) detail::fail(path.field("op"), "must be valid UTF-8");
  if (op == "generate") return parse_generate(map, path);
  if (op == kExpertLoadOp) return parse_op<ExpertLoadRequest>(map, path);
  if (op == kAbortOp) return checked(parse_op<AbortRequest>(map, path), path);
  if (op == kUpdateWeightsOp) return checked(parse_op<UpdateWeightsRequest>(map, path), path);
  if (op == kPauseOp) return parse_op<PauseGenerationRequest>(map, path);
  if (op == kContinueOp) return parse_op<ContinueGenerationRequest>(map, path);
  if (op == kGetVersionOp) return parse_op<GetWeightVersionRequest>(map, path);
  if (op == kUpdateVersionOp) return checked(parse_op<UpdateWeightVersionRequest>(map, path), path);
  if (op == kReleaseMemoryOp || op == kResumeMemoryOp) {
    auto request = parse_op<MemoryOccupationRequest>(map, path);
    request.action = op == kReleaseMemoryOp ? msg::MemoryAction::Release : msg::MemoryAction::Resume;
    return request;
  }
  if (op == kInitWeightGroupOp) return checked(parse_op<InitWeightGroupRequest>(map, path), path);
  if (op == kUpdateFromWeightGroupOp) return checked(parse_op<UpdateFromWeightGroupRequest>(map, path), path);
  if (op == kDestroyWeightGroupOp) return checked(parse_op<DestroyWeightGroupRequest>(map, path), path);
  detail::fail(path.field("op"), "unknown operation \"" + op +
                                     "\" (known: \"generate\", \"expert_load\", \"abort\", \"update_weights_from_disk\", "
                                     "\"pause_generation\", \"continue_generation\", \"get_weight_version\", "
                                     "\"update_weight_version\", \"release_memory_occupation\", "
                                     "\"resume_memory_occupation\", \"init_weights_update_group\", "
                                     "\"update_weights_from_distributed\", \"destroy_weights_update_group\")");
}

// A request frame of operation `op`.
template <class Request>
std::string encode_op(std::string_view op, const Request& request) {
  detail::StringSink sink;
  detail::Packer packer(sink);
  detail::write_client_map(packer, request, op);
  return std::move(sink.bytes);
}

}  // namespace

ClientRequest parse_client_request(std::string_view frame) {
  std::string rid;
  try {
    const msgpack::object_handle handle = detail::unpack_frame(frame, "request");
    const FieldPath path{nullptr, "request"};
    if (handle.get().type != msgpack::type::MAP) detail::fail_type(path, "a map", handle.get());
    rid = rid_of(handle.get());
    if (!is_valid_utf8(rid)) {
      rid.clear();  // echoed back, it would be a msgpack str that clients cannot decode
      detail::fail(path.field("rid"), "must be valid UTF-8");
    }
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

std::string encode_client_request(const ExpertLoadRequest& request) { return encode_op(kExpertLoadOp, request); }
std::string encode_client_request(const AbortRequest& request) { return encode_op(kAbortOp, request); }
std::string encode_client_request(const UpdateWeightsRequest& request) { return encode_op(kUpdateWeightsOp, request); }
std::string encode_client_request(const PauseGenerationRequest& request) { return encode_op(kPauseOp, request); }
std::string encode_client_request(const ContinueGenerationRequest& request) { return encode_op(kContinueOp, request); }
std::string encode_client_request(const GetWeightVersionRequest& request) { return encode_op(kGetVersionOp, request); }
std::string encode_client_request(const UpdateWeightVersionRequest& request) {
  return encode_op(kUpdateVersionOp, request);
}
std::string encode_client_request(const MemoryOccupationRequest& request) {
  return encode_op(request.action == msg::MemoryAction::Release ? kReleaseMemoryOp : kResumeMemoryOp, request);
}

std::string encode_client_request(const InitWeightGroupRequest& request) {
  return encode_op(kInitWeightGroupOp, request);
}
std::string encode_client_request(const UpdateFromWeightGroupRequest& request) {
  return encode_op(kUpdateFromWeightGroupOp, request);
}
std::string encode_client_request(const DestroyWeightGroupRequest& request) {
  return encode_op(kDestroyWeightGroupOp, request);
}

}  // namespace moe::transport
