#pragma once
// The ZeroMQ client protocol spoken on the ROUTER endpoint (docs/zmq-protocol.md): a request is one
// msgpack map; without an `op` key it is a generation with the field names of SGLang's /generate;
// `"op"` names the others: "expert_load" (the expert-load statistics), "abort" (end one of the
// client's own requests), "update_weights_from_disk" (SGLang's weight update), "pause_generation" and
// "continue_generation", "get_weight_version" and "update_weight_version", "release_memory_occupation"
// and "resume_memory_occupation", "init_weights_update_group", "update_weights_from_distributed" and
// "destroy_weights_update_group". The operations that change what the server serves (the weight
// update, pause, continue, the version's relabelling, the memory's release and resume, the weight
// group's calls) carry
// `admin_api_key` when the server was started with --admin-api-key. A reply is a map with the fields of SGLang's /generate response,
// {"expert_load": {...}, ...}, {"abort": {...}, ...}, {"success", "message", ...},
// {"message", "status", ...}, or {"error": {...}}. Any language with msgpack can speak it.
#include <string>
#include <string_view>
#include <variant>

#include "common/error.h"
#include "common/weight_group_call.h"
#include "moe/client.h"
#include "moe/messages.h"

namespace moe::transport {

// {"op": "expert_load", "rid": str, "reset": bool}: the expert-load statistics.
struct ExpertLoadRequest {
  std::string rid;     // echoed in the reply's meta_info.id, so a pipelining client can match it
  bool reset = false;  // zero the counts in the same step as the read: the next read covers a new window
  bool operator==(const ExpertLoadRequest&) const = default;
};

// {"op": "abort", "rid": str}: end the client's own request rid; it gets its reply with finish
// reason abort.
struct AbortRequest {
  std::string rid;
  bool operator==(const AbortRequest&) const = default;
};

// {"op": "update_weights_from_disk", "rid", "model_path", "weight_version", "abort_all_requests"}:
// SGLang's weight update.
struct UpdateWeightsRequest {
  std::string rid;           // echoed in the reply's meta_info.id
  msg::UpdateWeights update;  // its id is the front door's to set
  bool flush_cache = true;    // SGLang's field; only true: the prefix cache's KV came from the old weights
  std::string admin_api_key;  // the server's --admin-api-key, where it has one
  bool operator==(const UpdateWeightsRequest&) const = default;
};

// {"op": "pause_generation", "rid", "mode"}: SGLang's /pause_generation ("abort" when no mode).
struct PauseGenerationRequest {
  std::string rid;  // echoed in the reply's meta_info.id
  msg::PauseMode mode = msg::PauseMode::Abort;
  std::string admin_api_key;  // the server's --admin-api-key, where it has one
  bool operator==(const PauseGenerationRequest&) const = default;
};

// {"op": "continue_generation", "rid"}: SGLang's /continue_generation.
struct ContinueGenerationRequest {
  std::string rid;
  std::string admin_api_key;  // the server's --admin-api-key, where it has one
  bool operator==(const ContinueGenerationRequest&) const = default;
};

// {"op": "get_weight_version", "rid"}: the label replies carry now.
struct GetWeightVersionRequest {
  std::string rid;
  bool operator==(const GetWeightVersionRequest&) const = default;
};

// {"op": "update_weight_version", "rid", "new_version", "abort_all_requests"}: SGLang's relabelling
// of the weights serving now.
struct UpdateWeightVersionRequest {
  std::string rid;
  std::string new_version;
  bool abort_all_requests = false;
  std::string admin_api_key;  // the server's --admin-api-key, where it has one
  bool operator==(const UpdateWeightVersionRequest&) const = default;
};

// {"op": "release_memory_occupation" or "resume_memory_occupation", "rid", "tags"}: SGLang's
// endpoints of those names; every tag when `tags` is absent. Answered as a weight update.
struct MemoryOccupationRequest {
  std::string rid;
  msg::MemoryAction action = msg::MemoryAction::Release;  // the op's
  std::optional<std::vector<msg::MemoryTag>> tags;
  std::string admin_api_key;  // the server's --admin-api-key, where it has one
  bool operator==(const MemoryOccupationRequest&) const = default;
};

// SGLang's weight-group operations (docs/rl.md), by its field names, answered as a weight update;
// group_name is "weight_update_group" when absent.
// {"op": "init_weights_update_group", "rid", "master_address", "master_port", "rank_offset",
// "world_size", "group_name", "backend": "nccl"}
struct InitWeightGroupRequest {
  std::string rid;
  msg::UpdateWeights update = weight_group_update(msg::WeightGroupAction::Join);
  std::string backend = "nccl";  // the only one served
  std::string admin_api_key;     // the server's --admin-api-key, where it has one
  bool operator==(const InitWeightGroupRequest&) const = default;
};

// {"op": "update_weights_from_distributed", "rid", "names", "dtypes", "shapes", "group_name",
// "weight_version", "abort_all_requests", "flush_cache": true}
struct UpdateFromWeightGroupRequest {
  std::string rid;
  msg::UpdateWeights update = weight_group_update(msg::WeightGroupAction::Receive);
  bool flush_cache = true;  // SGLang's field; only true: the prefix cache's KV came from the old weights
  std::string admin_api_key;
  bool operator==(const UpdateFromWeightGroupRequest&) const = default;
};

// {"op": "destroy_weights_update_group", "rid", "group_name"}
struct DestroyWeightGroupRequest {
  std::string rid;
  msg::UpdateWeights update = weight_group_update(msg::WeightGroupAction::Leave);
  std::string admin_api_key;
  bool operator==(const DestroyWeightGroupRequest&) const = default;
};

// What a client may ask: a generation, or an operation named by `op`.
using ClientRequest = std::variant<msg::GenerateRequest, ExpertLoadRequest, AbortRequest, UpdateWeightsRequest,
                                   PauseGenerationRequest, ContinueGenerationRequest, GetWeightVersionRequest,
                                   UpdateWeightVersionRequest, MemoryOccupationRequest, InitWeightGroupRequest,
                                   UpdateFromWeightGroupRequest, DestroyWeightGroupRequest>;

// A request frame the server cannot serve. `rid` is the frame's own when it gave one, so the error
// reply can be matched to its request even when the rest of the frame is wrong.
class ClientRequestError : public Error {
 public:
  ClientRequestError(std::string rid, const std::string& message) : Error(message), rid_(std::move(rid)) {}
  const std::string& rid() const { return rid_; }

 private:
  std::string rid_;
};

// Parses a client's request frame; nil counts as "not given". Throws ClientRequestError naming the
// field for a frame that is not a msgpack map, a field it does not know or of the wrong type, an unknown `op`, or a generation without exactly one of `text`, `input_ids`, `messages`.
ClientRequest parse_client_request(std::string_view frame);

// The frame a client sends for `request` (the C++ client); absent optionals are left out.
std::string encode_client_request(const msg::GenerateRequest& request);
std::string encode_client_request(const ExpertLoadRequest& request);
std::string encode_client_request(const AbortRequest& request);
std::string encode_client_request(const UpdateWeightsRequest& request);
std::string encode_client_request(const PauseGenerationRequest& request);
std::string encode_client_request(const ContinueGenerationRequest& request);
std::string encode_client_request(const GetWeightVersionRequest& request);
std::string encode_client_request(const UpdateWeightVersionRequest& request);
std::string encode_client_request(const MemoryOccupationRequest& request);
std::string encode_client_request(const InitWeightGroupRequest& request);
std::string encode_client_request(const UpdateFromWeightGroupRequest& request);
std::string encode_client_request(const DestroyWeightGroupRequest& request);

// One reply, or one chunk of a streamed reply, for a client.
std::string encode_client_reply(const msg::TextOutput& output);

// The answer to an ExpertLoadRequest.
struct ExpertLoadReply {
  std::string rid;
  ExpertLoad load;
  bool operator==(const ExpertLoadReply&) const = default;
};

// {"expert_load": {"num_moe_layers", "num_experts", "tokens", "counts"}, "meta_info": {"id": rid}}:
// the fields of HTTP's GET /expert_load, and the rid where generation replies carry it.
std::string encode_expert_load_reply(const ExpertLoadReply& reply);

// The answer to an AbortRequest: whether rid named a live request of this client.
struct AbortReply {
  std::string rid;
  bool aborted = false;
  bool operator==(const AbortReply&) const = default;
};

// {"abort": {"rid": str, "aborted": bool}, "meta_info": {"id": rid}}.
std::string encode_abort_reply(const AbortReply& reply);

// The answer to an UpdateWeightsRequest.
struct WeightsUpdatedReply {
  std::string rid;
  msg::WeightsUpdated answer;  // the client sees success, message and weight_version
  bool operator==(const WeightsUpdatedReply&) const = default;
};

// {"success": bool, "message": str, "weight_version": str, "meta_info": {"id": rid}}: SGLang's
// answer, the version now in effect, and the rid.
std::string encode_weights_updated_reply(const WeightsUpdatedReply& reply);

// The answer to a PauseGenerationRequest or a ContinueGenerationRequest.
struct GenerationControlReply {
  std::string rid;
  std::string message;
  bool operator==(const GenerationControlReply&) const = default;
};

// {"message": str, "status": "ok", "meta_info": {"id": rid}}: SGLang's answer, and the rid.
std::string encode_generation_control_reply(const GenerationControlReply& reply);

// An error reply: {"error": {"message", "type", "code", "rid" when known}}.
std::string encode_client_error(const msg::ErrorReply& error);

// What a client receives: an output, an error, expert-load statistics, or an operation's answer.
using ClientReply = std::variant<msg::TextOutput, msg::ErrorReply, ExpertLoadReply, AbortReply, WeightsUpdatedReply,
                                 GenerationControlReply>;

// Parses a reply frame (the C++ client). Throws moe::Error naming the field when it is malformed.
ClientReply decode_client_reply(std::string_view frame);

}  // namespace moe::transport
