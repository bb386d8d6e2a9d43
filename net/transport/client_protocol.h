#pragma once
// The ZeroMQ client protocol spoken on the ROUTER endpoint (docs/zmq-protocol.md): a request is one
// msgpack map; without an `op` key it is a generation with the field names of SGLang's /generate,
// with `"op": "expert_load"` it asks for the expert-load statistics. A reply is a map with the fields
// of SGLang's /generate response, {"expert_load": {...}, ...}, or {"error": {...}}. Any language
// with msgpack can speak it.
#include <string>
#include <string_view>
#include <variant>

#include "common/error.h"
#include "moe/client.h"
#include "moe/messages.h"

namespace moe::transport {

// {"op": "expert_load", "rid": str, "reset": bool}: the expert-load statistics.
struct ExpertLoadRequest {
  std::string rid;     // echoed in the reply's meta_info.id, so a pipelining client can match it
  bool reset = false;  // zero the counts in the same step as the read: the next read covers a new window
  bool operator==(const ExpertLoadRequest&) const = default;
};

// What a client may ask: a generation, or an operation named by `op`.
using ClientRequest = std::variant<msg::GenerateRequest, ExpertLoadRequest>;

// A request frame the server cannot serve. `rid` is the frame's own when it gave one, so the error
// reply can be matched to its request even when the rest of the frame is wrong.
class ClientRequestError : public Error {
 public:
  ClientRequestError(std::string rid, const std::string& message) : Error(message), rid_(std::move(rid)) {}
  const std::string& rid() const { return rid_; }

 private:
  std::string rid_;
};

// Parses a client's request frame. Unknown fields are ignored and nil counts as "not given".
// Throws ClientRequestError naming the field for a frame that is not a msgpack map, a field of the
// wrong type, an unknown `op`, or a generation without exactly one of `text`, `input_ids`, `messages`.
ClientRequest parse_client_request(std::string_view frame);

// The frame a client sends for `request` (the C++ client); absent optionals are left out.
std::string encode_client_request(const msg::GenerateRequest& request);
std::string encode_client_request(const ExpertLoadRequest& request);

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

// An error reply: {"error": {"message", "type", "code", "rid" when known}}.
std::string encode_client_error(const msg::ErrorReply& error);

// What a client receives: an output, an error or expert-load statistics.
using ClientReply = std::variant<msg::TextOutput, msg::ErrorReply, ExpertLoadReply>;

// Parses a reply frame (the C++ client). Throws moe::Error naming the field when it is malformed.
ClientReply decode_client_reply(std::string_view frame);

}  // namespace moe::transport
