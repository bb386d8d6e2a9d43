#pragma once
// The ZeroMQ client protocol spoken on the ROUTER endpoint (docs/zmq-protocol.md): a request is one
// msgpack map with the field names of SGLang's /generate; a reply is a map with the fields of
// SGLang's /generate response, or {"error": {...}}. Any language with msgpack can speak it.
#include <string>
#include <string_view>
#include <variant>

#include "moe/messages.h"

namespace moe::transport {

// Parses a client's request frame. Unknown fields are ignored and nil counts as "not given".
// Throws moe::Error naming the field for a frame that is not a msgpack map, a field of the wrong
// type, or a request without exactly one of `text`, `input_ids`, `messages`.
msg::GenerateRequest parse_client_request(std::string_view frame);

// The frame a client sends for `request` (the C++ client); absent optionals are left out.
std::string encode_client_request(const msg::GenerateRequest& request);

// One reply, or one chunk of a streamed reply, for a client.
std::string encode_client_reply(const msg::TextOutput& output);

// An error reply: {"error": {"message", "type", "code", "rid" when known}}.
std::string encode_client_error(const msg::ErrorReply& error);

// What a client receives: an output or an error.
using ClientReply = std::variant<msg::TextOutput, msg::ErrorReply>;

// Parses a reply frame (the C++ client). Throws moe::Error naming the field when it is malformed.
ClientReply decode_client_reply(std::string_view frame);

}  // namespace moe::transport
